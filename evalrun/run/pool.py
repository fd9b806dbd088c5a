"""A pool of worker threads that works through a list in order, and stops cleanly on Ctrl-C.

This module owns only the threads and queues: ``run_pool`` hands items to
``jobs`` workers, passes every result to ``on_result`` in the calling thread
as it comes, and returns the results by position. A KeyboardInterrupt in the
calling thread sets ``cancel`` (so the work in flight can stop itself), waits
for the workers, and returns what finished with ``interrupted=True``. An
exception raised by the work is a bug in evalrun: it is re-raised in the
calling thread. What an item is, and what running one means, is the caller's.
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
    done: dict[int, Result] = {}
    interrupted = False
    # Plain queues, not futures: waiting on a set of N futures costs O(N) per
    # completion, which a 500-eval run pays 500 times on a busy machine.
    todo: queue.SimpleQueue[tuple[int, Item] | None] = queue.SimpleQueue()
    finished: queue.SimpleQueue[tuple[int, Result | BaseException]] = queue.SimpleQueue()
    for entry in enumerate(items):
        todo.put(entry)
    count = max(1, min(jobs, len(items)))
    workers = [
        threading.Thread(target=_work, args=(todo, finished, make_worker(i)), name=f"evalrun-eval-{i}", daemon=True)
        for i in range(count)
    ]
    for _ in workers:
        todo.put(None)
    try:
        for worker in workers:
            worker.start()
        while len(done) < len(items):
            index, outcome = _next(finished)
            if isinstance(outcome, BaseException):
                raise outcome  # a bug in evalrun, not in a scorer: stop everything
            done[index] = outcome
            if on_result:
                on_result(outcome)
    except KeyboardInterrupt:
        interrupted = True
        cancel.set()
        for worker in workers:
            worker.join()
        while not finished.empty():
            index, outcome = finished.get()
            if not isinstance(outcome, BaseException):
                done.setdefault(index, outcome)
    finally:
        for worker in workers:
            worker.join()
    return PoolOutcome(done=done, interrupted=interrupted)


def _next(finished: queue.SimpleQueue[tuple[int, Result | BaseException]]) -> tuple[int, Result | BaseException]:
    # A short timeout keeps the wait interruptible by Ctrl-C; get() returns at once when a result is there.
    while True:
        try:
            return finished.get(timeout=_WAIT_S)
        except queue.Empty:
            continue


def _work(
    todo: queue.SimpleQueue[tuple[int, Item] | None],
    finished: queue.SimpleQueue[tuple[int, Result | BaseException]],
    work: Callable[[Item], Result],
) -> None:
    while (entry := todo.get()) is not None:
        index, item = entry
        try:
            finished.put((index, work(item)))
        except BaseException as exc:  # handed to the calling thread, which re-raises it
            finished.put((index, exc))
