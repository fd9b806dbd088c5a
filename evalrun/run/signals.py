"""SIGTERM during a run: a CI runner's cancel stops the run the way Ctrl-C does, or is held off for a moment."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any


def sigterm_ignored() -> AbstractContextManager[None]:
    """SIGTERM ignored inside (one more signal must not leave a file half-decided); only on the main thread."""
    return _sigterm_handled(signal.SIG_IGN)


def sigterm_as_interrupt() -> AbstractContextManager[None]:
    """A CI runner's cancel (SIGTERM) stops the run the way Ctrl-C does: KeyboardInterrupt inside."""
    return _sigterm_handled(_raise_interrupt)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def _sigterm_handled(handler: Callable[[int, Any], None] | signal.Handlers) -> Iterator[None]:
    """``handler`` for SIGTERM inside, the previous one after; nothing changes off the main thread."""
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
