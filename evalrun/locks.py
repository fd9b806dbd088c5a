"""File locks: one writer at a time for a read-modify-write of a shared file.

``hold_lock`` takes an exclusive ``fcntl.flock`` on a sidecar lock file (never
on the file itself: ``write_atomic`` replaces that file, so a lock on it would
be held on an inode nobody else opens). The kernel drops the lock when its
holder dies, even by SIGKILL, so a killed run never leaves a file locked. The
lock file is left in place: deleting it would let a second writer lock a new
file while a third still holds the old one. On a filesystem that has no locks
the write goes ahead unlocked, as it did before locks existed.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def sidecar_lock(path: Path) -> Path:
    """The lock file beside ``path``: ``.<name>.lock``."""
    return path.with_name(f".{path.name}.lock")


@contextmanager
def hold_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (made if missing) for the ``with`` block; waits for it."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            # A filesystem without locks (some NFS mounts): write as before rather than not at all.
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
        yield
    finally:
        os.close(fd)  # closing the only descriptor releases the lock
