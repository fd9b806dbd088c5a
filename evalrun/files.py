"""Reading a file evalrun did not write without trusting it: a scorer's report, the manifest, a baseline, a results file.

Whoever controls the path may have left a directory, a FIFO (a plain ``open``
would block evalrun forever, beyond any timeout and SIGTERM), a symlink to
``/dev/zero`` (an endless read) or a file of gigabytes. So every such file is
opened non-blocking, checked with ``fstat`` *after* opening (no race between
check and open), accepted only as a regular file, and read up to a limit that
is counted while reading, not taken from ``st_size`` (a file that grows while
it is read is bounded too). A symlink to a regular file is followed: a scorer
that writes its report elsewhere and links it is legitimate.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

CHUNK = 1024 * 1024


class FileReadError(Exception):
    """The file cannot be read; ``reason`` is a short phrase (``is a FIFO (named pipe), not a regular file``)."""

    def __init__(self, reason: str, *, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing


_KINDS = (
    (stat.S_ISDIR, "is a directory, not a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file"),
    (stat.S_ISCHR, "is a character device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
)


def _open(path: Path) -> int:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileReadError("no such file", missing=True) from None
    except IsADirectoryError:
        raise FileReadError("is a directory, not a file") from None
    except OSError as exc:
        raise FileReadError(f"cannot open it ({exc.strerror or exc.__class__.__name__})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise FileReadError(f"cannot stat it ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        reason = next((text for test, text in _KINDS if test(mode)), "is not a regular file")
        raise FileReadError(reason)
    return fd


def iter_chunks(path: Path, limit: int, what: str) -> Iterator[bytes]:
    """The file's bytes in chunks; FileReadError if it is not a regular file or exceeds ``limit`` bytes.

    ``what`` names the kind of file in the error (``one report``, ``a manifest``).
    """
    fd = _open(path)
    try:
        yield from _chunks(fd, limit, what, expected=0)
    finally:
        os.close(fd)


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The whole file, at most ``limit`` bytes, in one piece; FileReadError as ``iter_chunks``.

    The first read asks for the size ``fstat`` gives (plus one byte), so a file
    that does not grow is read into one buffer, not chunks joined into a copy
    (``bytes.join`` of one piece returns that piece).
    """
    fd = _open(path)
    try:
        return b"".join(_chunks(fd, limit, what, expected=os.fstat(fd).st_size + 1))
    finally:
        os.close(fd)


def _chunks(fd: int, limit: int, what: str, *, expected: int) -> Iterator[bytes]:
    """Reads of at least CHUNK bytes (of ``expected`` at first), counted against ``limit`` as they come."""
    total = 0
    while chunk := _read(fd, min(max(expected - total, CHUNK), limit + 1 - total)):
        total += len(chunk)
        if total > limit:
            raise _too_large(limit, what)
        yield chunk


def _read(fd: int, size: int) -> bytes:
    try:
        return os.read(fd, size)
    except OSError as exc:
        raise FileReadError(f"cannot read it ({exc.strerror or exc.__class__.__name__})") from None


def _too_large(limit: int, what: str) -> FileReadError:
    return FileReadError(f"is larger than {_size(limit)}, the most evalrun reads from {what}")


def _size(limit: int) -> str:
    if limit >= 1024**3 and limit % 1024**3 == 0:
        return f"{limit // 1024**3} GiB"
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"
