"""Choosing the history backend for a location (SQLite for a file, PostgreSQL for a URL), and the one bounded way to use it.

Every command and the run reach a store through ``use_store``: it opens the
store, does one thing with it and closes it, all within the location's
timeout, and whatever goes wrong leaves as one ``HistoryError`` line. The
backends bound each wait themselves (SQLite's busy timeout, PostgreSQL's
connect, lock and statement timeouts); ``use_store`` also bounds the whole,
for a server that accepts and then never answers, where no server-side
timeout can fire. The work runs in a daemon thread the caller waits for, so
Ctrl-C or SIGTERM still reach the caller at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from evalrun.history.location import HistoryLocation
from evalrun.history.store import HistoryError, HistoryStore, describe_failure

T = TypeVar("T")


def open_store(location: HistoryLocation) -> HistoryStore:
    """Open (creating and migrating as needed) the store at ``location``."""
    if location.kind == "postgres":
        from evalrun.history.postgres import PostgresStore

        return PostgresStore(location)
    from evalrun.history.sqlite import SqliteStore

    return SqliteStore(location)


def use_store(location: HistoryLocation, action: Callable[[HistoryStore], T]) -> T:
    """``action(store)`` on the opened store, then close it; HistoryError (one line) on any failure or past the timeout."""
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        try:
            store = open_store(location)
            try:
                outcome.append((True, action(store)))
            finally:
                store.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, as one line
            outcome.append((False, exc))

    worker = threading.Thread(target=work, name="evalrun-history", daemon=True)
    worker.start()
    worker.join(location.timeout)  # a signal in the caller's thread interrupts this wait
    if not outcome:
        # Abandoned: a daemon thread never holds up the exit, and its transaction never commits half a run.
        raise HistoryError(f"{location.shown}: no answer within {location.timeout:g} s (EVALRUN_HISTORY_TIMEOUT)")
    ok, value = outcome[0]
    if ok:
        return value  # type: ignore[return-value]
    if isinstance(value, HistoryError):
        raise value
    assert isinstance(value, BaseException)
    raise HistoryError(describe_failure(location, value)) from None
