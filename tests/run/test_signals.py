"""SIGTERM during a run (evalrun.run.signals): Ctrl-C's way out, or held off; the previous handler always back."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from evalrun.run.signals import sigterm_as_interrupt, sigterm_ignored


def _own_handler(signum: int, frame: object) -> None:  # pragma: no cover - never delivered
    raise AssertionError("the previous handler ran")


@pytest.fixture
def own_handler():
    previous = signal.signal(signal.SIGTERM, _own_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_inside_is_a_keyboard_interrupt_and_the_handler_comes_back(own_handler) -> None:
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the signal ends the sleep
    assert signal.getsignal(signal.SIGTERM) is _own_handler


def test_sigterm_is_held_off_inside_and_the_handler_comes_back(own_handler) -> None:
    with sigterm_ignored():
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGTERM)  # ignored: nothing raised, nothing run
    assert signal.getsignal(signal.SIGTERM) is _own_handler


def test_off_the_main_thread_nothing_changes(own_handler) -> None:
    seen = []

    def worker() -> None:
        with sigterm_as_interrupt(), sigterm_ignored():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == [_own_handler]
