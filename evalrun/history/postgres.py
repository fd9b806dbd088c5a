"""The team history backend: PostgreSQL through psycopg.

Several CI shards may append at once; each append is one transaction, and
migrations run under a transaction-level advisory lock so two processes
opening an old database upgrade it once. Every wait is bounded by the
location's timeout: connecting, a lock held by another session
(``lock_timeout``), one statement (``statement_timeout``); a server that
accepts and never answers is bounded by ``use_store``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from evalrun.history import sql
from evalrun.history.location import HistoryLocation
from evalrun.history.records import StoredEval, StoredRun
from evalrun.history.store import DEFAULT_LAST, HistoryError, describe_failure

_MIGRATION_LOCK = 0x65766C72  # "evlr": one key all evalrun processes agree on


class PostgresStore:
    def __init__(self, location: HistoryLocation, *, target_version: int = sql.SCHEMA_VERSION) -> None:
        import psycopg

        self.location = location
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error, sql.SchemaTooNew)
        try:
            self._conn: Any = psycopg.connect(location.target, connect_timeout=max(2, math.ceil(location.wait)),
                                              autocommit=True, application_name="evalrun-history")
        except psycopg.Error as exc:
            raise HistoryError(describe_failure(location, exc)) from None
        try:
            wait_ms = max(1, int(location.wait * 1000))
            with self._write() as cur:
                # ints evalrun made: nothing to quote. A lock gives up first, so the message says it was a lock.
                cur.execute(f"SET lock_timeout = {max(1, wait_ms * 4 // 5)}")
                cur.execute(f"SET statement_timeout = {wait_ms}")
            with self._write() as cur:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                sql.migrate(cur, sql.POSTGRES, target_version)
        except BaseException:
            self._conn.close()
            raise

    @contextmanager
    def _write(self) -> Iterator[Any]:
        try:
            with self._conn.transaction(), self._conn.cursor() as cur:
                yield cur
        except self._errors as exc:
            raise HistoryError(describe_failure(self.location, exc)) from None

    def append(self, run: StoredRun, evals: Iterable[StoredEval] | None = None) -> bool:
        with self._write() as cur:  # one transaction: the whole run, or nothing
            return sql.insert_run(cur, sql.POSTGRES, run, evals)

    def runs(self, tier: str | None = None, last: int = DEFAULT_LAST, shards: bool = False) -> list[StoredRun]:
        with self._write() as cur:  # one transaction: one consistent view for the three reads
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return sql.select_runs(cur, sql.POSTGRES, tier, last, shards)

    def durations(self, tier: str, runs: int) -> list[tuple[str, float]]:
        with self._write() as cur:
            return sql.select_durations(cur, sql.POSTGRES, tier, runs)

    def close(self) -> None:
        self._conn.close()
