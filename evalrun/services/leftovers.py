"""Service processes as the kernel sees them: stop them, and stop what a dead run left.

This module owns the process-level side of services (``/proc`` is read by ``evalrun.procfs``):
how a service's group is stopped (``evalrun.process.terminate_group``, with
SIGINT to the postmaster for PostgreSQL), the JSON record written
for each running service, and ``reap_leftovers``, which uses those records to
stop what an earlier, SIGKILLed invocation left behind. ``evalrun.services.manager``
decides when to start and stop; this module knows how to stop safely.

A service process is tracked by its process group *and* by the start time the
kernel gives in ``/proc/<pid>/stat``, so a pid reused by an unrelated program is
never signalled. Nothing is ever stopped by name.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from evalrun.atomic import write_atomic
from evalrun.process import terminate_group
from evalrun.procfs import group_members, is_alive, proc_stat

DEFAULT_GRACE = 5.0
RECORD_VERSION = 1
# Only folders holding this marker are ever deleted, whatever a record says.
MARKER = ".evalrun-service"


# ---------------------------------------------------------------- leftovers


def reap_leftovers(state_dir: Path, *, grace: float = DEFAULT_GRACE) -> list[str]:
    """Stop services recorded by earlier invocations that died without stopping them."""
    lines: list[str] = []
    if not Path(state_dir).is_dir():
        return lines
    for path in sorted(Path(state_dir).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            if record.get("version") != RECORD_VERSION:
                raise ValueError("a record of another evalrun version")
            name, pid, pgid, start = record["name"], int(record["pid"]), int(record["pgid"]), int(record["proc_start"])
            owner, owner_start, kind = int(record["owner_pid"]), int(record["owner_start"]), record["kind"]
            data_dir = Path(record["data_dir"]) if record.get("data_dir") else None
        except (OSError, ValueError, KeyError, TypeError):
            path.unlink(missing_ok=True)  # unreadable: nothing in it can be trusted to signal
            continue
        if is_alive(owner, owner_start):
            continue  # its invocation is still running and will stop it itself
        stopped = False
        if is_alive(pid, start):
            stop_group(pgid, kind, grace, None)
            stopped = True
        elif (leader := proc_stat(pid)) is None or leader.start_ticks == start:
            # The leader is gone (or a zombie). Its pid cannot be reused while its
            # group has members, so members that started after it are its own.
            # A live process under that pid with another start time means reuse.
            if [m for m in group_members(pgid) or [] if m.start_ticks >= start]:
                stop_group(pgid, "run", grace, None)
                stopped = True
        remove_data_dir(data_dir)
        path.unlink(missing_ok=True)
        if stopped:
            lines.append(f"stopped leftover service {name} (pgid {pgid}) from an earlier run")
    return lines


def write_record(record: Path, name: str, kind: str, pid: int, pgid: int, data_dir: Path | None) -> None:
    """Record a service just spawned, so ``reap_leftovers`` can stop it if we die."""
    fields = {
        "version": RECORD_VERSION,
        "name": name,
        "kind": kind,
        "pid": pid,
        "pgid": pgid,
        "proc_start": _start_ticks(pid) or 0,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "owner_pid": os.getpid(),
        "owner_start": _start_ticks(os.getpid()) or 0,
        "data_dir": str(data_dir) if data_dir else None,
    }
    write_atomic(record, json.dumps(fields, indent=2) + "\n")


def remove_data_dir(data_dir: Path | None) -> bool:
    """Delete a service's temporary folder if it carries MARKER; True if it is gone."""
    if data_dir is None or not (data_dir / MARKER).is_file():
        return False
    shutil.rmtree(data_dir, ignore_errors=True)
    return not data_dir.exists()


# ---------------------------------------------------------------- processes


def _start_ticks(pid: int) -> int | None:
    stat = proc_stat(pid)
    return stat.start_ticks if stat else None


def stop_group(pgid: int, kind: str, grace: float, proc: subprocess.Popen[bytes] | None) -> bool:
    """Ask the group to stop, wait ``grace``, then KILL it. True if KILL was needed."""
    # The postmaster leads its group: SIGINT to it alone is a fast shutdown of all.
    leader_signal = signal.SIGINT if kind == "postgres" else None
    return terminate_group(pgid, grace, leader=proc, leader_signal=leader_signal)
