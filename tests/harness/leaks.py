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
        try:  # os.open, not Path.read_text: this runs twice per test
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


_TAGGED: dict[tuple[int, str], bool] = {}  # a process's environment is fixed when it starts


def _tagged(pid: int, started: str, tag: bytes) -> bool:
    key = (pid, started)
    if key not in _TAGGED:
        try:
            _TAGGED[key] = tag in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return False  # gone, or not ours to read
    return _TAGGED[key]


def live_descendants() -> set[tuple[int, str]]:
    """(pid, start time) of every live process this one started: its descendants
    and whatever carries its leak tag. Zombies have stopped and do not count."""
    me = os.getpid()
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    ours, todo = set(), [me]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in ours:
                ours.add(child)
                todo.append(child)
    tag = f"{LEAK_TAG_VAR}={os.environ.get(LEAK_TAG_VAR, '')}".encode()
    ours |= {pid for pid, (_, _, started) in table.items() if pid not in ours and pid != me and _tagged(pid, started, tag)}
    return {(pid, table[pid][2]) for pid in ours if table[pid][1] not in "ZX"}


# Processes a session-scoped fixture owns (a database shared by many tests), with
# all their descendants: started inside the first test that uses them, stopped
# when the session ends. (PostgreSQL's children leave the postmaster's group.)
SESSION_ROOTS: set[int] = set()


def not_session_owned(found: set[tuple[int, str]]) -> set[tuple[int, str]]:
    if not SESSION_ROOTS:
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


def leftovers(before: set[tuple[int, str]]) -> list[str]:
    """Processes started since ``before`` that do not go within the grace; they are killed."""
    deadline = time.monotonic() + LEAK_GRACE_S
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
