"""Reading Linux's ``/proc``: a process's state, group and start time; the live members of a group.

The one place evalrun parses ``/proc/<pid>/stat``. Start times (clock ticks
since boot) tell a live process from a reused pid; states tell a zombie that
an init never reaps from a process that still runs.
"""

from __future__ import annotations

from typing import NamedTuple
import os
import time


class ProcStat(NamedTuple):
    pid: int
    state: str  # "R", "S", "Z" (zombie), "X" (dead), ...
    pgid: int
    start_ticks: int

    @property
    def live(self) -> bool:
        return self.state not in ("Z", "X")


_STAT_READ = 4096  # more than /proc/<pid>/stat ever holds


def proc_stat(pid: int) -> ProcStat | None:
    """``/proc/<pid>/stat`` of one process, or None when it is gone (or there is no /proc)."""
    # One read(2) of a descriptor, not a buffered file: the record is at most about 1.1 KB (52 numbers
    # and a comm of at most 15 bytes), and a second read at its end would have the kernel build it again.
    # Read for every scorer just spawned (its pidfile), while the child starts: two thirds of the cost
    # of open().read() (measured: 34 against 50 us).
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        raw = os.read(fd, _STAT_READ)
    except OSError:
        return None
    finally:
        os.close(fd)
    return parse_stat(pid, raw)


def parse_stat(pid: int, raw: bytes) -> ProcStat | None:
    """The fields evalrun reads of a ``/proc/<pid>/stat`` record; None when it is not one."""
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return ProcStat(pid, fields[0].decode("ascii", "replace"), int(fields[2]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None when it is gone."""
    stat = proc_stat(pid)
    return stat.start_ticks if stat else None


# /proc's start times count clock ticks (USER_HZ) of CLOCK_BOOTTIME, rounded down: a process forked between two
# readings of that clock in one tick started in that tick. The clock is Linux's: elsewhere nothing is worked out.
_CLOCK_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)
_TICK_NS = 10**9 // os.sysconf("SC_CLK_TCK") if _CLOCK_BOOTTIME is not None else 0


def boot_clock_ns() -> int | None:
    """CLOCK_BOOTTIME in nanoseconds, the clock ``/proc``'s start times count; None where there is none."""
    return time.clock_gettime_ns(_CLOCK_BOOTTIME) if _CLOCK_BOOTTIME is not None else None


def start_ticks_between(before_ns: int | None, after_ns: int | None) -> int | None:
    """The start time ``/proc/<pid>/stat`` gives a process forked between two ``boot_clock_ns`` readings, when
    both fall in one clock tick (exact: the kernel rounds the fork's instant down to its tick); None when they
    do not (the caller reads ``/proc``) or there is no such clock. Spares a ``/proc`` read per scorer."""
    if before_ns is None or after_ns is None or not _TICK_NS:
        return None
    tick = before_ns // _TICK_NS
    return tick if after_ns // _TICK_NS == tick else None


def group_members(pgid: int) -> list[ProcStat] | None:
    """The live (not zombie) members of process group ``pgid``; None when /proc cannot be read."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    members = []
    for entry in entries:
        if entry.isdigit():
            stat = proc_stat(int(entry))
            if stat is not None and stat.pgid == pgid and stat.live:
                members.append(stat)
    return members


def is_alive(pid: int, start_ticks: int) -> bool:
    """Whether ``pid`` is still the very process that started at ``start_ticks`` (not a reused pid)."""
    stat = proc_stat(pid)
    return stat is not None and stat.live and stat.start_ticks == start_ticks


def pipe_writers(inodes: set[int], exclude: int) -> list[tuple[ProcStat, str]]:
    """(stat, command name) of every other live process holding the write end of one of these pipes.

    A pipe is ``pipe:[inode]`` in ``/proc/<pid>/fd``; its open mode is in
    ``/proc/<pid>/fdinfo``. Processes we may not look into are passed over.
    """
    targets = {f"pipe:[{inode}]" for inode in inodes}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.isdigit() or int(entry) == exclude:
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        if any(_writes_to(entry, fd, targets) for fd in fds):
            stat = proc_stat(int(entry))
            if stat is not None and stat.live:
                found.append((stat, _command_name(entry)))
    return found


def _writes_to(pid: str, fd: str, targets: set[str]) -> bool:
    try:
        if os.readlink(f"/proc/{pid}/fd/{fd}") not in targets:
            return False
        with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as fh:
            info = fh.read(4096)
    except OSError:
        return False
    for line in info.splitlines():
        if line.startswith(b"flags:"):
            return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    return False


def _command_name(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as fh:
            return fh.read(64).decode("utf-8", "replace").strip()
    except OSError:
        return "?"
