"""Choosing the history backend for a location (SQLite for a file, PostgreSQL for a URL), and the one bounded way to use it.

Every command and the run reach a store through ``use_store``: it opens the
store, does one thing with it and closes it, all within the location's
timeout, and whatever goes wrong leaves as one ``HistoryError`` line. The
backends bound each wait themselves (SQLite's busy timeout, PostgreSQL's
connect, lock and statement timeouts); ``use_store`` also bounds the whole,
for a server that accepts and then never answers, where no server-side
timeout can fire. The work runs in a daemon thread the caller waits for, so
Ctrl-C or SIGTERM still reach the caller at once.

The timeout's clock starts once the backend's driver is loaded: a cold
``import psycopg`` (hundreds of milliseconds, more on a slow machine) is
evalrun's own start-up, not the store's answer, and has its bound apart
(``LOAD_TIMEOUT``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from evalrun.history.location import HistoryLocation
from evalrun.history.store import HistoryError, HistoryStore, describe_failure

T = TypeVar("T")
LOAD_TIMEOUT = 30.0  # seconds to import a backend's driver: local code, so only a broken install comes near it


def load_backend(location: HistoryLocation) -> Callable[[HistoryLocation], HistoryStore]:
    """The store class for ``location``, its driver imported: everything before talking to the database."""
    if location.kind == "postgres":
        import psycopg  # noqa: F401 - loaded here, before the store's clock (PostgresStore imports it again, at no cost)

        from evalrun.history.postgres import PostgresStore

        return PostgresStore
    from evalrun.history.sqlite import SqliteStore

    return SqliteStore


def open_store(location: HistoryLocation) -> HistoryStore:
    """Open (creating and migrating as needed) the store at ``location``."""
    return load_backend(location)(location)


def use_store(location: HistoryLocation, action: Callable[[HistoryStore], T]) -> T:
    """``action(store)`` on the opened store, then close it; HistoryError (one line) on any failure or past the timeout."""
    outcome: list[tuple[bool, object]] = []
    loaded = threading.Event()

    def work() -> None:
        try:
            backend = load_backend(location)
            loaded.set()  # the store's clock starts here
            store = backend(location)
            try:
                outcome.append((True, action(store)))
            finally:
                store.close()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller, as one line
            outcome.append((False, exc))
        finally:
            loaded.set()

    worker = threading.Thread(target=work, name="evalrun-history", daemon=True)
    worker.start()
    # Each wait is interrupted by a signal in the caller's thread (Ctrl-C, SIGTERM).
    if not loaded.wait(LOAD_TIMEOUT):
        driver = "psycopg" if location.kind == "postgres" else "sqlite3"
        raise HistoryError(f"{location.shown}: {driver} did not load within {LOAD_TIMEOUT:g} s; is it installed whole?")
    worker.join(location.timeout)
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
