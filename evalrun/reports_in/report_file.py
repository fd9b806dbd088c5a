"""Opening a file a scorer wrote (JSON report, JUnit XML, saved TAP stdout) without trusting it.

A scorer controls what sits at the path evalrun reads: it may leave a
directory, a FIFO (a plain ``open`` would block evalrun forever, beyond the
timeout and SIGTERM), a symlink to ``/dev/zero`` (an endless read) or a file of
gigabytes. So every report is opened non-blocking, checked with ``fstat`` *after*
opening (no race between check and open), accepted only as a regular file, and
read up to ``REPORT_LIMIT`` bytes. A symlink to a regular file is followed: a
scorer that writes its report elsewhere and links it is legitimate.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

REPORT_LIMIT = 32 * 1024 * 1024  # bytes read from any one report: far above a real suite's, far below harm
CHUNK = 1024 * 1024


class ReportFileError(Exception):
    """The file cannot be read as a report; ``reason`` is a short phrase (``is a FIFO, not a file``)."""

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
        raise ReportFileError("no such file", missing=True) from None
    except IsADirectoryError:
        raise ReportFileError("is a directory, not a file") from None
    except OSError as exc:
        raise ReportFileError(f"cannot open it ({exc.strerror or exc.__class__.__name__})") from None
    try:
        mode = os.fstat(fd).st_mode
    except OSError as exc:
        os.close(fd)
        raise ReportFileError(f"cannot stat it ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        os.close(fd)
        reason = next((text for test, text in _KINDS if test(mode)), "is not a regular file")
        raise ReportFileError(reason)
    return fd


def iter_report_chunks(path: Path, limit: int = REPORT_LIMIT) -> Iterator[bytes]:
    """The file's bytes in chunks; ReportFileError if it is not a regular file or exceeds ``limit``.

    The check for size happens while reading, not from ``st_size``: a file that
    grows while it is read (a scorer's leftover child still writing) is bounded too.
    """
    fd = _open(path)
    try:
        total = 0
        while True:
            try:
                chunk = os.read(fd, min(CHUNK, limit + 1 - total))
            except OSError as exc:
                raise ReportFileError(f"cannot read it ({exc.strerror or exc.__class__.__name__})") from None
            if not chunk:
                return
            total += len(chunk)
            if total > limit:
                raise ReportFileError(f"is larger than {_size(limit)}, the most evalrun reads from one report")
            yield chunk
    finally:
        os.close(fd)


def read_report_bytes(path: Path, limit: int = REPORT_LIMIT) -> bytes:
    """The whole file, bounded; see ``iter_report_chunks``."""
    return b"".join(iter_report_chunks(path, limit))


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"
