"""Choosing the history backend for a location: SQLite for a file, PostgreSQL for a URL."""

from __future__ import annotations

from evalrun.history.location import HistoryLocation
from evalrun.history.store import HistoryStore


def open_store(location: HistoryLocation) -> HistoryStore:
    """Open (creating and migrating as needed) the store at ``location``."""
    if location.kind == "postgres":
        from evalrun.history.postgres import PostgresStore

        return PostgresStore(location)
    from evalrun.history.sqlite import SqliteStore

    return SqliteStore(location)
