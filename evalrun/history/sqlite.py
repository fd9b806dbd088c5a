"""The default history backend: one SQLite file (stdlib ``sqlite3``), no setup.

Writers take SQLite's write lock up front (``BEGIN IMMEDIATE``) and wait for
it (``busy_timeout``, the location's timeout), so two runs appending at once
both land; the file is in WAL mode so readers never block a writer. Every
failure, opening included, leaves as one ``HistoryError`` line.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from evalrun.history import sql
from evalrun.history.location import HistoryLocation
from evalrun.history.records import StoredEval, StoredRun
from evalrun.history.store import DEFAULT_LAST, HistoryError, describe_failure

class SqliteStore:
    def __init__(self, location: HistoryLocation, *, target_version: int = sql.SCHEMA_VERSION) -> None:
        self.location = location
        path = Path(location.target)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(path, timeout=location.wait, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise HistoryError(describe_failure(location, exc)) from None
        try:
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA journal_mode = WAL")
            with self._write() as cur:
                sql.migrate(cur, sql.SQLITE, target_version)
        except (OSError, sqlite3.Error) as exc:  # read-only, full, locked past the wait, not a database
            self._conn.close()
            raise HistoryError(describe_failure(location, exc) + _why(path)) from None
        except BaseException:
            self._conn.close()
            raise

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Cursor]:
        try:
            cur = self._conn.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield cur
            except BaseException:
                self._conn.rollback()
                raise
            cur.execute("COMMIT")
        except (sqlite3.Error, sql.SchemaTooNew) as exc:
            raise HistoryError(describe_failure(self.location, exc)) from None

    def append(self, run: StoredRun, evals: Iterable[StoredEval] | None = None) -> bool:
        with self._write() as cur:  # one transaction: the whole run, or nothing
            return sql.insert_run(cur, sql.SQLITE, run, evals)

    def runs(self, tier: str | None = None, last: int = DEFAULT_LAST, shards: bool = False) -> list[StoredRun]:
        try:
            cur = self._conn.cursor()
            cur.execute("BEGIN")  # one snapshot for the three reads
            try:
                return sql.select_runs(cur, sql.SQLITE, tier, last, shards)
            finally:
                cur.execute("COMMIT")
        except sqlite3.Error as exc:
            raise HistoryError(describe_failure(self.location, exc)) from None

    def durations(self, tier: str, runs: int) -> list[tuple[str, float]]:
        try:
            return sql.select_durations(self._conn.cursor(), sql.SQLITE, tier, runs)
        except sqlite3.Error as exc:
            raise HistoryError(describe_failure(self.location, exc)) from None

    def close(self) -> None:
        self._conn.close()


def _why(path: Path) -> str:
    """What SQLite's "unable to open database file" leaves out: the folder is read-only."""
    try:
        if os.statvfs(path.parent).f_flag & os.ST_RDONLY:
            return f" ({path.parent} is on a read-only filesystem)"
        if not os.access(path.parent, os.W_OK):
            return f" ({path.parent} is not writable)"
    except OSError:
        pass
    return ""
