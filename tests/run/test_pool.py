"""evalrun.run.pool: results by position, each passed on once and one at a time, bugs and Ctrl-C in the caller."""

from __future__ import annotations

import _thread
import signal
import threading
import time

import pytest

from evalrun.run.pool import run_pool


def test_every_result_is_passed_on_once_one_at_a_time_and_returned_by_position() -> None:
    seen: list[int] = []
    inside = threading.Lock()

    def on_result(result: int) -> None:
        assert inside.acquire(blocking=False), "on_result ran twice at once"
        try:
            time.sleep(0.001)  # long enough for another worker to finish meanwhile
            seen.append(result)
        finally:
            inside.release()

    outcome = run_pool(list(range(40)), 4, lambda _i: lambda item: item * 10, cancel=threading.Event(),
                       on_result=on_result)
    assert outcome.done == {i: i * 10 for i in range(40)} and not outcome.interrupted
    assert sorted(seen) == [i * 10 for i in range(40)]


def test_a_bug_in_the_work_or_in_on_result_is_raised_in_the_calling_thread() -> None:
    def work(item: int) -> int:
        if item == 3:
            raise ZeroDivisionError("a bug in the work")
        return item

    with pytest.raises(ZeroDivisionError, match="a bug in the work"):
        run_pool(list(range(6)), 2, lambda _i: work, cancel=threading.Event())

    def on_result(_result: int) -> None:
        raise KeyError("a bug in on_result")

    with pytest.raises(KeyError, match="a bug in on_result"):
        run_pool([1, 2], 1, lambda _i: lambda item: item, cancel=threading.Event(), on_result=on_result)


def test_a_bug_stops_the_pool_the_work_in_flight_is_cancelled_and_nothing_more_is_taken() -> None:
    started: list[int] = []
    cancel = threading.Event()
    second_started = threading.Event()
    saw_cancel: list[bool] = []

    def work(item: int) -> int:
        started.append(item)
        if item == 0:
            assert second_started.wait(10)
            raise ZeroDivisionError("a bug in the work")
        second_started.set()
        saw_cancel.append(cancel.wait(10))  # a scorer in flight is stopped, not waited out
        return item

    with pytest.raises(ZeroDivisionError):
        run_pool(list(range(20)), 2, lambda _i: work, cancel=cancel)
    assert sorted(started) == [0, 1] and saw_cancel == [True]


@pytest.fixture
def ctrl_c_raises():
    """SIGINT raises KeyboardInterrupt, as in a terminal: a process started in the background by a shell without job
    control (``cmd &`` in a script, a CI step) starts with SIGINT ignored, and then interrupt_main does nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_in_the_caller_cancels_keeps_what_finished_and_passes_nothing_more_on(ctrl_c_raises) -> None:
    cancel = threading.Event()
    seen: list[int] = []

    def work(item: int) -> int:
        if item == 0:
            return 0
        if item == 1:
            _thread.interrupt_main()  # Ctrl-C, as the calling thread gets it
        assert cancel.wait(10), "the pool never set cancel"
        return item

    outcome = run_pool([0, 1, 2], 1, lambda _i: work, cancel=cancel, on_result=seen.append)
    assert outcome.interrupted and cancel.is_set()
    assert outcome.done == {0: 0, 1: 1, 2: 2}  # finished after the interrupt: kept
    assert seen == [0]  # ...but not passed on
