"""Atomic file writes: a temp file beside the target, fsync, then os.replace.

A crash or kill at any moment leaves either the old file or the new one. The
file gets the mode an ordinary ``open()`` would give it (``0666 & ~umask``):
``mkstemp`` alone makes it 0600, which CI artifact uploaders running as
another user cannot read. A symlink to a file stays a symlink: the file it
points to is replaced.

What is not a file is written into, never replaced (``writes_in_place``): a
device (``/dev/null``), a FIFO or socket (``--json >(jq .)``), and the names of
this process's open files (``/dev/stdout``, ``/dev/fd/N``, ``/proc/...``).
Renaming over them would, as root, turn ``/dev/null`` into a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

_umask_lock = threading.Lock()


def write_atomic(
    path: str | os.PathLike[str],
    data: str | bytes | Iterable[str],
    *,
    fsync: bool = True,
    tmp_tag: str = "",
) -> None:
    """Write ``data`` to ``path`` so that readers never see a torn file.

    ``data`` may be an iterable of text pieces, written as they come, so a large
    file never has to exist whole in memory. ``fsync=False`` skips the flush to
    disk, for files that need not survive a power cut (a record of processes
    that would not survive it either). ``tmp_tag`` goes into the temporary
    file's name, so a sweep can tell whose half-written file a kill left."""
    pieces = [data] if isinstance(data, (str, bytes)) else data
    if writes_in_place(path):
        _write_in_place(Path(path), pieces)
        return
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{tmp_tag}", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~current_umask())
        with os.fdopen(fd, "wb") as fh:
            for piece in pieces:
                fh.write(piece.encode("utf-8") if isinstance(piece, str) else piece)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


_OPEN_FILE_NAMES = ("/dev/stdout", "/dev/stderr")
_OPEN_FILE_FOLDERS = ("/dev/fd/", "/proc/")


def writes_in_place(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is written into rather than replaced: not a regular file (nor a folder), or a name of an open file."""
    absolute = os.path.abspath(path)
    if absolute in _OPEN_FILE_NAMES or absolute.startswith(_OPEN_FILE_FOLDERS):
        return True
    try:
        mode = os.stat(absolute).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_in_place(target: Path, pieces: Iterable[str | bytes]) -> None:
    """Append to what ``target`` names; a FIFO that no process reads is an error, not a wait."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "no process reads from it", str(target)) from None
        raise
    os.set_blocking(fd, True)  # a reader that is slow is waited for, as a pipe's writer is
    with os.fdopen(fd, "wb") as fh:
        for piece in pieces:
            fh.write(piece.encode("utf-8") if isinstance(piece, str) else piece)


def current_umask() -> int:
    """The process's umask, read without changing it where the kernel tells it (Linux >= 4.7)."""
    try:
        # UTF-8, whose codec every interpreter has loaded (ascii's is a module to load): the Umask line is ASCII.
        with open("/proc/self/status", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    # Elsewhere the only way is to set it and put it back; the lock keeps our
    # own threads from creating files in between.
    with _umask_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask
