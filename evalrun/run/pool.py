"""A pool of worker threads that works through a list in order, and stops cleanly on Ctrl-C.

This module owns only the threads: ``run_pool`` hands items to ``jobs``
workers, passes every result to ``on_result`` as it comes (one at a time, in
the order they finish, from the worker that finished it), and returns the
results by position. A KeyboardInterrupt in the calling thread sets ``cancel``
(so the work in flight can stop itself), waits for the workers, and returns
what finished with ``interrupted=True``; results that come in after that are
kept but not passed to ``on_result``. An exception raised by the work, or by
``on_result``, is a bug in evalrun: it is re-raised in the calling thread,
``cancel`` is set, no worker takes another item, and nothing more is passed
on. What an item is, and what running one means, is the caller's.

The calling thread sleeps until the last result (or Ctrl-C): waking it for
each result, then handing the GIL back and forth with the worker that had
already gone on to its next item, cost about a tenth of a millisecond a result.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# How often the calling thread wakes while it waits, so Ctrl-C is noticed.
_WAIT_S = 0.25


@dataclass
class PoolOutcome(Generic[Result]):
    done: dict[int, Result]  # by the item's position; items not finished are missing
    interrupted: bool


class _Shared(Generic[Result]):
    """What the workers and the calling thread share, under one lock."""

    def __init__(self, count: int, on_result: Callable[[Result], None] | None) -> None:
        self.lock = threading.Lock()
        self.finished = threading.Event()  # every item is done, or a bug stopped the pool
        self.done: dict[int, Result] = {}
        self.error: BaseException | None = None
        self.quiet = False  # after Ctrl-C: results are kept, not passed on
        self._count = count
        self._on_result = on_result

    def result(self, index: int, outcome: Result) -> None:
        with self.lock:
            if self.error is not None:
                return
            self.done[index] = outcome
            if self._on_result is not None and not self.quiet:
                try:
                    self._on_result(outcome)
                except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which re-raises it
                    self.error = exc
            if self.error is not None or len(self.done) == self._count:
                self.finished.set()

    def failed(self, exc: BaseException) -> None:
        with self.lock:
            if self.error is None:
                self.error = exc
            self.finished.set()


def run_pool(
    items: Sequence[Item],
    jobs: int,
    make_worker: Callable[[int], Callable[[Item], Result]],
    *,
    cancel: threading.Event,
    on_result: Callable[[Result], None] | None = None,
) -> PoolOutcome[Result]:
    """Run ``make_worker(i)(item)`` for every item on ``jobs`` threads (at least one, at most one per item).

    ``make_worker(i)`` is called once per worker thread, in the calling thread,
    to give worker ``i`` its own state (a scratch folder, ...).
    """
    shared: _Shared[Result] = _Shared(len(items), on_result)
    interrupted = False
    todo: queue.SimpleQueue[tuple[int, Item] | None] = queue.SimpleQueue()
    for entry in enumerate(items):
        todo.put(entry)
    count = max(1, min(jobs, len(items)))
    workers = [
        threading.Thread(target=_work, args=(todo, shared, make_worker(i)), name=f"evalrun-eval-{i}", daemon=True)
        for i in range(count)
    ]
    for _ in workers:
        todo.put(None)
    try:
        for worker in workers:
            worker.start()
        if items:
            # A short timeout keeps the wait interruptible by Ctrl-C; the last result wakes it at once.
            while not shared.finished.wait(_WAIT_S):
                pass
        if shared.error is not None:
            cancel.set()  # a bug in evalrun, not in a scorer: stop everything (the work in flight too)
            raise shared.error
    except KeyboardInterrupt:
        interrupted = True
        with shared.lock:
            shared.quiet = True
        cancel.set()
    finally:
        for worker in workers:
            worker.join()
    with shared.lock:
        done = dict(shared.done)
    return PoolOutcome(done=done, interrupted=interrupted)


def _work(
    todo: queue.SimpleQueue[tuple[int, Item] | None],
    shared: _Shared[Result],
    work: Callable[[Item], Result],
) -> None:
    while shared.error is None and (entry := todo.get()) is not None:  # after a bug, take nothing more
        index, item = entry
        try:
            outcome = work(item)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which re-raises it
            shared.failed(exc)
            continue
        shared.result(index, outcome)
