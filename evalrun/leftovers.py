"""What a killed run leaves behind, as the kernel sees it: stop it on the next run.

This module owns the process-level side of everything evalrun starts that may
outlive it (``/proc`` is read by ``evalrun.procfs``): how a group is stopped
(``evalrun.process.terminate_group``, with SIGINT to the postmaster for
PostgreSQL), the JSON pidfile written for each running service *and scorer* (a
scorer's in its worker's ``PidfileSlot``, rewritten in place for each),
``reap_leftovers``, which uses those pidfiles to stop what an earlier,
SIGKILLed invocation left behind (a run's scratch folders are swept by
``evalrun.scratch``). ``evalrun.services.manager`` and
``evalrun.run.execute`` decide when to start and stop; this module knows how to
stop safely.

A record is acted on only once its run is known to be dead: each run holds a
lock while it lives (``evalrun.owners``), so a second run in the same project
never takes a live run's services for leftovers, with or without ``/proc``.
A process is tracked by its process group *and* by its start time (the
kernel's in ``/proc/<pid>/stat``; without ``/proc``, as on macOS, ``ps``'s
against the time the record says it was spawned: ``evalrun.process_table``),
so a pid reused by an unrelated program is never signalled. What cannot be
told is left alone and said. Nothing is ever stopped by name.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import NamedTuple, TYPE_CHECKING

from evalrun.files import FileReadError, read_bounded
from evalrun.process import terminate_group
from evalrun.owners import Liveness, hold_owner_lock, let_go_owner_lock, owner_state, pid_state, sweep_owner_locks
from evalrun.procfs import group_members, is_alive, proc_stat, start_ticks

if TYPE_CHECKING:
    from evalrun.process_table import PsRow

DEFAULT_GRACE = 5.0
PIDFILE_VERSION = 1
PIDFILE_LIMIT = 64 * 1024  # bytes read of one pidfile: it holds a few short fields
# Only folders holding this marker are ever deleted, whatever a pidfile says.
MARKER = ".evalrun-service"
# A pidfile's temporary file while it is written: a SIGKILL at that moment leaves it behind.
_SLOT_NAME = re.compile(r"scorer\.(\d+)\.\d+\.json\Z")  # a scorer's pidfile (scorer_pidfile): its owner's pid, a number
_scorer_pidfiles = itertools.count()
_PIDFILE_TMP = re.compile(r"\..+\.json\.owner-(\d+)-(\d+)\.[^/]*\.tmp\Z")


# ---------------------------------------------------------------- leftovers


class Leftover(NamedTuple):
    """What became of one pidfile an earlier, dead invocation left (``reports_out.run_notes.leftover_line`` says it).

    ``outcome``: ``stopped`` (its process group was stopped), ``owner unknown`` (whether the run that started
    it still runs cannot be told: left alone) or ``process unknown`` (its run is dead, but whether the process
    still runs cannot be told: left alone).
    """

    kind: str  # "scorer" (a scorer of an eval) or "service"
    name: str
    pgid: int
    outcome: str
    owner: int = 0  # the pid of the run that started it
    pidfile: Path | None = None  # the record to remove by hand, when it is left alone


def reap_leftovers(state_dir: Path, *, grace: float = DEFAULT_GRACE) -> list[Leftover]:
    """Stop services and scorers whose pidfiles earlier invocations left when they died without stopping them.

    A record is acted on only when its run is known to be dead (``evalrun.owners``: the lock it held while
    it lived is free, or its pid is gone), and its process only when it is known to be the one the record
    names (a start time from ``/proc``, or from ``ps`` where there is no ``/proc``). What cannot be told is
    left alone, record and data folder included, and returned as such.
    """
    lines: list[Leftover] = []
    state_dir = Path(state_dir)
    if not state_dir.is_dir():
        return lines
    _sweep_pidfile_temps(state_dir)
    table = _ProcessTable()
    referenced: set[str] = set()
    for path in sorted(state_dir.glob("*.json")):
        try:
            entry = json.loads(read_bounded(path, PIDFILE_LIMIT, "a pidfile").decode("utf-8"))
            if entry.get("version") != PIDFILE_VERSION:
                raise ValueError("a pidfile of another evalrun version")
            name, pid, pgid, start = entry["name"], int(entry["pid"]), int(entry["pgid"]), int(entry["proc_start"])
            owner, owner_start, kind = int(entry["owner_pid"]), int(entry["owner_start"]), entry["kind"]
            data_dir = Path(entry["data_dir"]) if entry.get("data_dir") else None
            spawned_at = float(entry.get("spawned_at") or 0)
            lock = entry.get("owner_lock")
        except (FileReadError, ValueError, KeyError, TypeError, AttributeError):  # AttributeError: JSON, not an object
            if _slot_owner_may_live(path.name):
                continue  # a live run's scorer slot between two scorers (blank, PidfileSlot): its run removes it
            with contextlib.suppress(OSError):  # a directory by that name stays; it names no process
                path.unlink(missing_ok=True)  # unreadable (or a FIFO left to hang us): nothing in it can be trusted to signal
            continue
        owner_is = owner_state(state_dir, lock, owner, owner_start)
        if owner_is is Liveness.ALIVE:
            continue  # its invocation is still running and will stop it itself
        if owner_is is Liveness.UNKNOWN:
            if not path.exists():
                continue  # removed by its run as we looked: the run was alive and stopped it itself
            referenced.add(str(lock))
            lines.append(Leftover(kind, name, pgid, "owner unknown", owner, path))
            continue
        verdict = table.leftover(pid, pgid, start, spawned_at)
        if verdict is None:
            referenced.add(str(lock))
            lines.append(Leftover(kind, name, pgid, "process unknown", owner, path))
            continue
        if verdict:
            stop_group(pgid, kind if table.leader_alive else "run", grace, None)
        remove_data_dir(data_dir)
        path.unlink(missing_ok=True)
        if verdict:
            lines.append(Leftover(kind, name, pgid, "stopped", owner))
    sweep_owner_locks(state_dir, keep=referenced)
    return lines


class _ProcessTable:
    """Whether a dead run's process (or its group) still runs: ``/proc`` where there is one, else ``ps``
    (read once per sweep, only when a dead run left a record)."""

    def __init__(self) -> None:
        self._procfs = proc_stat(os.getpid()) is not None
        self._ps: dict[int, PsRow] | None = None
        self._ps_read = False
        self.leader_alive = False

    def leftover(self, pid: int, pgid: int, start: int, spawned_at: float) -> bool | None:
        """True: the process or members of its group still run and are the record's; False: nothing of it
        runs; None: cannot tell."""
        self.leader_alive = False
        if self._procfs and start:
            if is_alive(pid, start):
                self.leader_alive = True
                return True
            leader = proc_stat(pid)
            if leader is None or leader.start_ticks == start:
                # The leader is gone (or a zombie). Its pid cannot be reused while its
                # group has members, so members that started after it are its own.
                # A live process under that pid with another start time means reuse.
                return bool([m for m in group_members(pgid) or [] if m.start_ticks >= start])
            return False
        if not spawned_at:
            return None  # a record without a spawn time, read without /proc: nothing to tell reuse by
        # Local: only a system without /proc reads ps (this one does, once per sweep, and only for a dead run's record).
        from evalrun.process_table import SAME_START_S, ps_table, same_start

        if not self._ps_read:
            self._ps, self._ps_read = ps_table(), True
        if self._ps is None:
            return None
        row = self._ps.get(pid)
        if row is not None and row.live and same_start(row, spawned_at):
            self.leader_alive = True
            return True
        if row is None or same_start(row, spawned_at):
            return any(m.pgid == pgid and m.live and m.started > spawned_at - SAME_START_S for m in self._ps.values())
        return False  # a later process under that pid: the record's is gone


def write_pidfile(
    pidfile: Path, name: str, kind: str, pid: int, pgid: int, data_dir: Path | None, *, start: int | None = None
) -> None:
    """Write the pidfile of a group just spawned (``kind``: "run" or "postgres" services, "scorer"), so
    ``reap_leftovers`` can stop it if we die.

    Written once per service (a scorer's is a ``PidfileSlot``), so it is kept cheap: one small write to a
    temporary file of our own, then a rename over the name (which replaces whatever is
    there, a symlink included, and never follows it). No fsync: after a power
    cut there is nothing left to stop. The temporary file names its owner, so a
    kill mid-write leaves nothing the next run keeps. ``start``: ``pid``'s start time in ``/proc``'s ticks when
    the caller knows it (``evalrun.procfs.start_ticks_between``); else ``/proc`` is read.
    """
    os.close(_write_whole(pidfile, _record(name, kind, pid, pgid, data_dir, start, _owner_lock(pidfile))))


def _record(name: str, kind: str, pid: int, pgid: int, data_dir: Path | None, start: int | None,
            lock: str | None) -> bytes:
    owner, owner_start = _own_start()
    fields = {
        "version": PIDFILE_VERSION,
        "name": name,
        "kind": kind,
        "pid": pid,
        "pgid": pgid,
        "proc_start": start if start is not None else start_ticks(pid) or 0,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "spawned_at": time.time(),  # with ps's start times, tells our process from a reused pid where there is no /proc
        "owner_pid": owner,
        "owner_start": owner_start,
        "owner_lock": lock,
        "data_dir": str(data_dir) if data_dir else None,
    }
    return (json.dumps(fields) + "\n").encode("utf-8")


def _write_whole(pidfile: Path, data: bytes) -> int:
    """``data`` under ``pidfile``'s name, whole from the moment it appears there; the open descriptor of it."""
    owner, owner_start = _own_start()
    folder, base = os.path.split(pidfile)
    tmp = os.path.join(folder, f".{base}.owner-{owner}-{owner_start}.{next(_tmp_numbers)}.tmp")
    # The mode is 0666 less the umask, as open() gives: the kernel applies the umask.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
    try:
        try:
            if os.write(fd, data) != len(data):
                raise OSError(errno.ENOSPC, "pidfile written short", str(tmp))
            os.replace(tmp, pidfile)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        let_go_owner_lock(pidfile.parent, str(pidfile))
        raise
    return fd


def scorer_pidfile(folder: Path) -> Path:
    """A new name for a scorer's pidfile in ``folder``, as ``_SLOT_NAME`` reads it: this process's pid, a number."""
    return folder / f"scorer.{os.getpid()}.{next(_scorer_pidfiles)}.json"


class PidfileSlot:
    """The pidfile of one worker's scorers, one after the other: rewritten in place for each, blanked between.

    A scorer's pidfile made and removed for every scorer cost a file created, renamed and unlinked each time
    (about a tenth of evalrun's CPU per trivial scorer). The slot is written whole under its name once (as
    ``write_pidfile`` writes), then each later record is one ``pwrite`` over it, padded with blanks to the
    file's length, and a finished scorer's record is blanked: a blank record names no process, and every
    reader passes over it (``reap_leftovers`` leaves a blank slot of a live run alone and removes a dead
    run's). Should the name be gone (another run's sweep, the user), the next record is written whole again.
    ``close`` removes it and lets go of the owner lock, unless its scorer was never blanked (a second Ctrl-C
    left the worker supervising it): then the record and the lock stay, so the next run stops that group once
    this process has died.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._size = 0
        self._live = False  # the record names a scorer group not yet gone
        self._lock: str | None = None  # the owner lock its records name, held from its first record to close

    def write(self, name: str, pid: int, *, start: int | None = None) -> None:
        """Record the scorer group ``pid`` just spawned (``start``: as ``write_pidfile``'s)."""
        if self._fd is None:
            self._lock = _owner_lock(self.path)
        data = _record(name, "scorer", pid, pid, None, start, self._lock)
        if self._fd is not None:
            padded = data + b" " * (self._size - len(data))
            try:
                if os.fstat(self._fd).st_nlink and os.pwrite(self._fd, padded, 0) == len(padded):
                    self._size = len(padded)
                    self._live = True
                    return
            except OSError:
                pass
            self._forget()
        self._fd = _write_whole(self.path, data)  # on failure it lets go of the lock: the next record holds it again
        self._size = len(data)
        self._live = True

    def blank(self) -> None:
        """The scorer's group is gone: its record names nothing any more."""
        self._live = False
        if self._fd is None:
            return
        try:
            if os.pwrite(self._fd, b" " * self._size, 0) == self._size:
                return
        except OSError:
            pass
        self._forget()
        with contextlib.suppress(OSError):
            self.path.unlink(missing_ok=True)  # what could not be blanked goes, as a scorer's pidfile went

    def close(self) -> None:
        """No scorer runs from this slot any more: remove it and let go of the owner lock."""
        self._forget()
        if self._live:  # its scorer may still run: the record stays for the next run, the lock for our life
            return
        with contextlib.suppress(OSError):  # what cannot be removed is a blank record: the next run's sweep removes it
            self.path.unlink(missing_ok=True)
        let_go_owner_lock(self.path.parent, str(self.path))

    def _forget(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def remove_pidfile(pidfile: Path) -> None:
    """Remove a pidfile ``write_pidfile`` wrote (its group is stopped), then let go of the owner lock it named."""
    pidfile.unlink(missing_ok=True)
    let_go_owner_lock(pidfile.parent, str(pidfile))


_tmp_numbers = itertools.count()
_own: tuple[int, int] | None = None  # (pid, start ticks): a forked child has another pid


def _own_start() -> tuple[int, int]:
    """This process's pid and start ticks, read once per process."""
    global _own
    me = os.getpid()
    if _own is None or _own[0] != me:
        _own = (me, start_ticks(me) or 0)
    return _own


def _owner_lock(pidfile: Path) -> str | None:
    """This run's owner lock beside ``pidfile`` (``evalrun.owners``), held until ``remove_pidfile``; None where
    it cannot be made (the next run then falls back on the pid)."""
    try:
        return hold_owner_lock(pidfile.parent, str(pidfile))
    except OSError:
        return None


def _slot_owner_may_live(name: str) -> bool:
    """Whether a scorer pidfile's name (``scorer.<owner pid>.<n>.json``) names a run that may still live."""
    match = _SLOT_NAME.match(name)
    return match is not None and pid_state(int(match.group(1)), 0) is not Liveness.DEAD


def _sweep_pidfile_temps(state_dir: Path) -> None:
    """Remove half-written pidfiles whose writer is known to be gone; a live (or unknown) writer's are left alone."""
    for path in state_dir.glob(".*.tmp"):
        match = _PIDFILE_TMP.match(path.name)
        if match and pid_state(int(match.group(1)), int(match.group(2))) is Liveness.DEAD:
            path.unlink(missing_ok=True)


def remove_data_dir(data_dir: Path | None) -> bool:
    """Delete a service's temporary folder if it carries MARKER; True if it is gone."""
    if data_dir is None or not (data_dir / MARKER).is_file():
        return False
    shutil.rmtree(data_dir, ignore_errors=True)
    return not data_dir.exists()


# ---------------------------------------------------------------- processes


def stop_group(pgid: int, kind: str, grace: float, proc: subprocess.Popen[bytes] | None) -> bool:
    """Ask the group to stop, wait ``grace``, then KILL it. True if KILL was needed."""
    # The postmaster leads its group: SIGINT to it alone is a fast shutdown of all.
    leader_signal = signal.SIGINT if kind == "postgres" else None
    return terminate_group(pgid, grace, leader=proc, leader_signal=leader_signal)


write_record = write_pidfile  # the name before the rename; remove once nothing imports it
