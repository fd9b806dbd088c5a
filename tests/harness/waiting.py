"""Bounded waits for tests: a call that must return, a condition that must come true.

Neither is a speed limit: the bounds are generous and only turn a hang into a
failure, on however loaded a machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


def finishes(call: Callable[[], T], within: float = 60.0) -> T:
    """``call()``'s result, or a test failure if it has not returned within ``within`` s.

    Not a speed limit: the tests that use it make the wrong behaviour take an
    hour (a deadline, a grace or a poll interval of 3600 s), so the generous
    bound only turns that hang into a failure, on however loaded a machine.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    if thread.is_alive():
        pytest.fail(f"still running after {within:g} s: it waited for something it should not have", pytrace=False)
    if "error" in box:
        raise box["error"]
    return box["result"]


def wait_until(condition: Callable[[], T], within: float = 30.0, what: str = "the condition") -> T:
    """Poll ``condition`` until it is truthy; fail after a generous ``within`` s."""
    deadline = time.monotonic() + within
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not come true within {within:g} s", pytrace=False)
        time.sleep(0.02)
    return value
