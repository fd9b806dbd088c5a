"""The process table where there is no ``/proc`` (macOS): ``ps``, read once, for a killed run's leftovers.

``evalrun.procfs`` reads Linux's ``/proc`` and gives exact start times. Without
it, ``ps -A -o pid= -o pgid= -o state= -o etime=`` (the same keywords on macOS's
BSD ps and on procps) gives each process's group, state and elapsed time,
from which its start is known to the second. ``evalrun.leftovers`` compares
that with the time a pidfile says its process was spawned, so a pid reused by
an unrelated program is never signalled; only the rare path of a killed run's
leftovers runs ``ps``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

PS_TIMEOUT = 10.0
PS_LIMIT = 16 * 1024 * 1024  # bytes of ps output read: far more than any machine's process table
SAME_START_S = 3.0  # a spawn time and ps's start (whole seconds, read later) differ by less than this
_ETIME = re.compile(r"(?:(?:(\d+)-)?(\d+):)?(\d+):(\d+)\Z")


@dataclass(frozen=True)
class PsRow:
    pid: int
    pgid: int
    state: str  # "S", "R", "Z" (zombie), ...
    started: float  # seconds since the epoch, to about a second

    @property
    def live(self) -> bool:
        return not self.state.startswith(("Z", "X"))


def parse_etime(text: str) -> int | None:
    """Seconds from ps's ``etime``: ``[[dd-]hh:]mm:ss``; None when it is not that."""
    match = _ETIME.match(text.strip())
    if match is None:
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def parse_ps(text: str, now: float) -> dict[int, PsRow]:
    """Rows of ``ps -A -o pid= -o pgid= -o state= -o etime=`` by pid; lines that are not four fields are passed over."""
    rows: dict[int, PsRow] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 4 or not fields[0].isdigit() or not fields[1].isdigit():
            continue
        elapsed = parse_etime(fields[3])
        if elapsed is None:
            continue
        rows[int(fields[0])] = PsRow(int(fields[0]), int(fields[1]), fields[2], now - elapsed)
    return rows


def ps_table() -> dict[int, PsRow] | None:
    """Every process ``ps`` shows, by pid; None when there is no ``ps`` or it fails."""
    program = shutil.which("ps") or ("/bin/ps" if os.access("/bin/ps", os.X_OK) else None)
    if program is None:
        return None
    try:
        proc = subprocess.run([program, "-A", "-o", "pid=", "-o", "pgid=", "-o", "state=", "-o", "etime="],
                              capture_output=True, timeout=PS_TIMEOUT, env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    rows = parse_ps(proc.stdout[:PS_LIMIT].decode("ascii", "replace"), time.time())
    return rows or None


def same_start(row: PsRow, spawned_at: float) -> bool:
    """Whether ``row`` is the process spawned at ``spawned_at`` (wall clock), not a later one under its pid."""
    return abs(row.started - spawned_at) < SAME_START_S

