"""The leak gate's eyes: which live processes this pytest process started, and stopping those left over.

A test that ends with a process it started still running fails (an error in
its teardown names the process and kills it); the session checks again at
its end for anything started outside a test (the fixtures are in
``harness.plugin``). Under pytest-xdist each worker checks its own processes.
A process counts as ours if it descends from this one, or carries this
session's leak tag in its environment (every process this one starts
inherits it unless a test gives it a made-up environment), so a leftover is
found even after its parent died and it was re-parented to init.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

# Not EVALRUN_*: Project.env drops those.
LEAK_TAG_VAR = "PYTEST_EVALRUN_LEAK_TAG"
LEAK_GRACE_S = 10.0  # a process on its way out gets this long to go (only paid by a leak)


def _process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, start time) of every process in /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:  # os.open, not Path.read_text: a leak makes this run every 50 ms
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                raw = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        table[int(name)] = (int(fields[1]), fields[0].decode(), fields[19].decode())
    return table


# What the gate knows of every process it has seen, read once: the start time
# and whether it carries the leak tag (a process's environment is fixed when
# it starts). Keyed by pid and the inode number of /proc/<pid>, which a
# directory listing gives without a system call per process: a new process,
# even one that reuses a pid, has a new inode. So a scan reads only the
# processes that are new since the last one, and this suite's own.
_SEEN: dict[tuple[int, int], tuple[str, bool]] = {}


def _read_stat(pid: int) -> tuple[int, str, str] | None:
    """(parent pid, state, start time) of a process, or None if it is gone."""
    try:  # os.open, not Path.read_text: this runs for every new process
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    return int(fields[1]), fields[0].decode(), fields[19].decode()


def _tagged(pid: int, tag: bytes) -> bool:
    try:
        return tag in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False  # gone, or not ours to read


def _children(pid: int) -> list[int]:
    """The direct children of a process, from each of its threads' ``children`` file."""
    found: list[int] = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in threads:
        try:
            fd = os.open(f"/proc/{pid}/task/{tid}/children", os.O_RDONLY)
            try:
                found.extend(int(child) for child in os.read(fd, 1 << 16).split())
            finally:
                os.close(fd)
        except OSError:
            continue
    return found


def live_descendants() -> set[tuple[int, str]]:
    """(pid, start time) of every live process this one started: its descendants
    and whatever carries its leak tag. Zombies have stopped and do not count."""
    me = os.getpid()
    tag = f"{LEAK_TAG_VAR}={os.environ.get(LEAK_TAG_VAR, '')}".encode()
    current: set[tuple[int, int]] = set()
    ours = set()
    with os.scandir("/proc") as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            pid, key = int(entry.name), (int(entry.name), entry.inode())
            current.add(key)
            if key not in _SEEN:
                stat = _read_stat(pid)
                if stat is None:
                    continue
                _SEEN[key] = (stat[2], pid != me and _tagged(pid, tag))
            if _SEEN[key][1]:
                ours.add(pid)
    for key in set(_SEEN) - current:
        del _SEEN[key]
    todo = [me]
    while todo:
        for child in _children(todo.pop()):
            if child not in ours:
                ours.add(child)
                todo.append(child)
    live = set()
    for pid in ours:
        stat = _read_stat(pid)
        if stat is not None and stat[1] not in "ZX":
            live.add((pid, stat[2]))
    return live


# Processes a session-scoped fixture owns (a database shared by many tests), with
# all their descendants: started inside the first test that uses them, stopped
# when the session ends. (PostgreSQL's children leave the postmaster's group.)
SESSION_ROOTS: set[int] = set()


def not_session_owned(found: set[tuple[int, str]]) -> set[tuple[int, str]]:
    if not found or not SESSION_ROOTS:
        return found
    table = _process_table()

    def owned(pid: int) -> bool:
        seen = set()
        while pid in table and pid not in seen:
            if pid in SESSION_ROOTS:
                return True
            seen.add(pid)
            pid = table[pid][0]
        return False

    return {(pid, started) for pid, started in found if not owned(pid)}


def leftovers(before: set[tuple[int, str]], grace: float = LEAK_GRACE_S) -> list[str]:
    """Processes started since ``before`` that do not go within ``grace`` seconds; they are killed."""
    deadline = time.monotonic() + grace
    while (new := not_session_owned(live_descendants() - before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    described = []
    for pid, _ in sorted(new):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmdline = "?"
        described.append(f"{pid}: {cmdline}")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return described
