"""SIGTERM during a run: a CI runner's cancel stops the run the way Ctrl-C does, or is held off for a moment."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def sigterm_ignored() -> Iterator[None]:
    """SIGTERM ignored inside (one more signal must not leave a file half-decided); only on the main thread."""
    try:
        previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """A CI runner's cancel (SIGTERM) stops the run the way Ctrl-C does: KeyboardInterrupt inside."""

    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
