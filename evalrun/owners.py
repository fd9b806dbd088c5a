"""Whether the evalrun run that owns a pidfile or a scratch folder is still alive: a lock it holds while it lives.

Each run holds an exclusive ``fcntl.flock`` on an owner lock file for as long
as it has pidfiles in a folder (``hold_owner_lock``), and on its scratch
folder's marker for as long as that folder lives; the kernel releases a lock
when its holder dies, even by SIGKILL. Another run asks with a shared,
non-blocking lock on the same file (``lock_state``): refused means alive,
granted means dead. That answer
needs no ``/proc`` and works on Linux and macOS alike (flock is BSD's call).

Where there is no lock to ask (a record written before owner locks existed, a
lock file someone removed, a filesystem without locks), ``pid_state`` answers
from what the platform can tell: ``/proc``'s start time on Linux; elsewhere a
pid that does not exist is dead, and one that does is *unknown* (it may be a
reused pid, or our owner). Unknown is never dead: callers touch nothing.

The lock file is opened close-on-exec, so no scorer or service inherits it (a
leftover scorer must not keep its killed run "alive"); a forked child shares
its parent's lock, as it shares its run.
"""

from __future__ import annotations

import enum
import fcntl
import os
import re
import secrets
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from evalrun.procfs import is_alive, proc_stat

OWNER_LOCK = re.compile(r"\.owner-\d+-[0-9a-f]{16}\.lock\Z")  # the only names owner_state opens
_NEW_LOCK = re.compile(r"\.\.owner-\d+-[0-9a-f]{16}\.lock\.[0-9a-f]{8}\.new\Z")  # lock_new_file's, if killed mid-way


class Liveness(enum.Enum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"  # never read as dead: leave the owner's things alone


@dataclass
class _Held:
    name: str
    fd: int
    users: set[str]  # the pidfiles that name this lock: it is let go with the last of them


_held: dict[tuple[int, str], _Held] = {}  # (pid, folder) -> this process's lock there
_held_lock = threading.Lock()  # scorers' pidfiles are written from every worker thread


def _after_fork_in_child() -> None:
    global _held_lock
    _held_lock = threading.Lock()  # a fork from a thread while another held it must not leave it held forever


os.register_at_fork(after_in_child=_after_fork_in_child)


def hold_owner_lock(folder: Path, user: str) -> str | None:
    """The name of this process's owner lock file in ``folder``, held for ``user`` (a pidfile) until
    ``let_go_owner_lock``: made and locked for the first user, removed after the last. None when the
    folder's filesystem has no locks (the next run then falls back on the pid)."""
    key = (os.getpid(), str(folder))
    with _held_lock:
        held = _held.get(key)
        if held is None:
            name = f".owner-{os.getpid()}-{secrets.token_hex(8)}.lock"
            fd = lock_new_file(folder / name)
            if fd is None:
                return None
            held = _held[key] = _Held(name, fd, set())
        held.users.add(user)
        return held.name


def let_go_owner_lock(folder: Path, user: str) -> None:
    """``user`` no longer needs the lock (its pidfile is removed): after the last, the lock file goes.

    The file is removed before the lock is released, so no other run ever finds it free while a pidfile
    that names it may still be read.
    """
    key = (os.getpid(), str(folder))
    with _held_lock:
        held = _held.get(key)
        if held is None or user not in held.users:
            return
        held.users.discard(user)
        if held.users:
            return
        del _held[key]
        (folder / held.name).unlink(missing_ok=True)
        release(held.fd)


def lock_new_file(path: Path, content: bytes = b"") -> int | None:
    """Make ``path`` holding ``content``, already locked (exclusively) when it appears under its name, so no
    other run ever finds it unlocked; the descriptor to keep open (closing it releases the lock), or None
    where the filesystem has no locks (then no file is left)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.new")
    fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if content:
            os.write(fd, content)
        os.rename(tmp, path)
    except OSError:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        return None
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)  # closing the only descriptor releases the lock
        except OSError:
            pass


def lock_state(path: Path) -> Liveness:
    """Whether the process holding ``path`` locked is alive: ALIVE (its lock refuses ours), DEAD (no one holds
    it), UNKNOWN (no such file, not a plain file, or no locks on this filesystem)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO: never waited on
    except OSError:
        return Liveness.UNKNOWN
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Liveness.UNKNOWN
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: two runs asking at once do not block each other
        except BlockingIOError:
            return Liveness.ALIVE
        except OSError:  # ENOLCK, EOPNOTSUPP...: a filesystem without locks cannot say
            return Liveness.UNKNOWN
        return Liveness.DEAD
    finally:
        os.close(fd)


def pid_state(pid: int, start_ticks: int) -> Liveness:
    """Whether process ``pid`` that started at ``start_ticks`` (``/proc``'s clock ticks; 0 when unknown) lives."""
    if proc_stat(os.getpid()) is not None:  # /proc answers: the pid and its start time
        if start_ticks and is_alive(pid, start_ticks):
            return Liveness.ALIVE
        if start_ticks or proc_stat(pid) is None:
            return Liveness.DEAD
        return Liveness.UNKNOWN  # alive, but no start time to tell it from a reused pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return Liveness.DEAD  # no process has that pid: whatever owned it is gone
    except OSError:
        return Liveness.UNKNOWN  # another user's process: ours or a reused pid
    return Liveness.UNKNOWN  # a process has that pid: without start times, ours or a reused one


def owner_state(folder: Path, lock_name: object, pid: int, start_ticks: int) -> Liveness:
    """The owner's lock in ``folder`` when it names one and the lock answers; else what its pid tells."""
    if isinstance(lock_name, str) and OWNER_LOCK.match(lock_name):
        state = lock_state(folder / lock_name)
        if state is not Liveness.UNKNOWN:
            return state
    return pid_state(pid, start_ticks)


def sweep_owner_locks(folder: Path, keep: set[str]) -> None:
    """Remove the owner lock files of runs that are gone, except those named in ``keep``."""
    own = {held.name for (pid, where), held in list(_held.items()) if where == str(folder)}
    try:
        names = [p.name for p in folder.iterdir() if OWNER_LOCK.match(p.name) or _NEW_LOCK.match(p.name)]
    except OSError:
        return
    for name in names:
        # A lock file being made is locked by its maker too (lock_new_file): one nobody holds is a dead run's.
        if name not in keep and name not in own and lock_state(folder / name) is Liveness.DEAD:
            (folder / name).unlink(missing_ok=True)
