"""The history schema, its migrations, and the SQL both backends share.

This module owns the tables and every statement on them. The two backends
(``sqlite``, ``postgres``) differ only in how they connect, lock and spell a
few types; they pass a ``Dialect``. Migrations are numbered and applied in
order on open, each inside the transaction that holds the writer lock, so two
processes opening an old database at once upgrade it once.
"""

from __future__ import annotations

import json
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol

from evalrun.history.records import StoredCheck, StoredEval, StoredRun


class Dialect(NamedTuple):
    pk: str  # an auto-numbered primary key column type
    ref: str  # the type of a column referring to it
    real: str
    placeholder: str  # "?" or "%s"


SQLITE = Dialect("INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", "REAL", "?")
POSTGRES = Dialect("BIGSERIAL PRIMARY KEY", "BIGINT", "DOUBLE PRECISION", "%s")

# Version N is reached by applying MIGRATIONS[N - 1]. Never edit a released step: add one.
MIGRATIONS: list[list[str | Callable[[Any, Dialect], None]]] = [
    [
        """CREATE TABLE evalrun_runs (
            pk {pk}, run_id TEXT NOT NULL UNIQUE, tier TEXT NOT NULL, started_at TEXT NOT NULL,
            finished_at TEXT, recorded_at TEXT NOT NULL, source TEXT NOT NULL, git_commit TEXT, git_branch TEXT,
            git_dirty INTEGER, evalrun_version TEXT NOT NULL, exit_code INTEGER, interrupted INTEGER NOT NULL,
            baseline TEXT NOT NULL)""",
        "CREATE INDEX evalrun_runs_tier ON evalrun_runs (tier, started_at)",
        """CREATE TABLE evalrun_evals (
            run_pk {ref} NOT NULL REFERENCES evalrun_runs (pk) ON DELETE CASCADE, name TEXT NOT NULL,
            status TEXT NOT NULL, duration_s {real} NOT NULL, exit_code INTEGER, message TEXT, models TEXT,
            tokens INTEGER, metrics TEXT NOT NULL, PRIMARY KEY (run_pk, name))""",
        """CREATE TABLE evalrun_checks (
            run_pk {ref} NOT NULL REFERENCES evalrun_runs (pk) ON DELETE CASCADE, eval TEXT NOT NULL,
            name TEXT NOT NULL, assertions INTEGER NOT NULL, passed INTEGER NOT NULL, message TEXT, evidence TEXT,
            PRIMARY KEY (run_pk, eval, name))""",
    ],
    [
        # Room for repeated runs of a check (passes of runs); null until repeats exist.
        "ALTER TABLE evalrun_checks ADD COLUMN runs INTEGER",
        "ALTER TABLE evalrun_checks ADD COLUMN passes INTEGER",
        "CREATE INDEX evalrun_checks_name ON evalrun_checks (eval, name)",
    ],
    [
        # The experiment (column) an eval ran under; its name is eval[experiment] too. Null: none.
        "ALTER TABLE evalrun_evals ADD COLUMN experiment TEXT",
    ],
    [
        # Who judged a check (model#hash of its prompt and rubric, evalrun.scorer.judging); null: no model did.
        "ALTER TABLE evalrun_checks ADD COLUMN judge TEXT",
    ],
    [
        # Check names stored once, ever: a run's rows hold a number, not a 1,000-character name (and its
        # two index copies). ``key`` is a digest of eval and name, so the unique index stays small.
        """CREATE TABLE evalrun_check_names (
            pk {pk}, key TEXT NOT NULL UNIQUE, eval TEXT NOT NULL, name TEXT NOT NULL)""",
        """CREATE TABLE evalrun_check_results (
            run_pk {ref} NOT NULL REFERENCES evalrun_runs (pk) ON DELETE CASCADE,
            check_pk {ref} NOT NULL REFERENCES evalrun_check_names (pk), assertions INTEGER NOT NULL,
            passed INTEGER NOT NULL, runs INTEGER, passes INTEGER, message TEXT, evidence TEXT, judge TEXT,
            PRIMARY KEY (run_pk, check_pk))""",
        lambda cur, dialect: _names_once(cur, dialect),
        "DROP TABLE evalrun_checks",
    ],
    [
        # Whether the run phase was isolated from the network, and how: the results' ``network`` as JSON
        # (isolated, mechanism, reason). Null: t3, or a run stored before evalrun recorded it.
        "ALTER TABLE evalrun_runs ADD COLUMN network TEXT",
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)
VERSION_TABLE = "CREATE TABLE IF NOT EXISTS evalrun_schema (version INTEGER NOT NULL)"


class SchemaTooNew(Exception):
    """The database was written by a newer evalrun."""


class Cursor(Protocol):
    def execute(self, sql: str, params: Sequence[Any] = ...) -> Any: ...
    def executemany(self, sql: str, params: Sequence[Sequence[Any]]) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


def migrate(cur: Cursor, dialect: Dialect, target: int = SCHEMA_VERSION) -> int:
    """Bring the schema to ``target``; the caller holds the writer lock. Returns the version found."""
    cur.execute(VERSION_TABLE)
    cur.execute("SELECT version FROM evalrun_schema")
    row = cur.fetchone()
    found = int(row[0]) if row else 0
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(f"history schema version {found} is newer than this evalrun's ({SCHEMA_VERSION}); upgrade evalrun")
    for step in MIGRATIONS[found:target]:
        for statement in step:
            if callable(statement):  # a step that moves data, in the same transaction
                statement(cur, dialect)
            else:
                cur.execute(statement.format(pk=dialect.pk, ref=dialect.ref, real=dialect.real))
    if found < target:
        if row:
            cur.execute(_q(dialect, "UPDATE evalrun_schema SET version = ?"), (target,))
        else:
            cur.execute(_q(dialect, "INSERT INTO evalrun_schema (version) VALUES (?)"), (target,))
    return found


def insert_run(cur: Cursor, dialect: Dialect, run: StoredRun, evals: Iterable[StoredEval] | None = None) -> bool:
    """Insert one run with its evals and checks; False when that run id is already stored.

    ``evals`` (default: ``run.evals``) may be a generator: each eval and its
    checks are inserted as it comes, so the caller never holds every check of a
    run at once. The caller's one transaction keeps the run whole or absent.
    """
    cur.execute(
        _q(dialect, """INSERT INTO evalrun_runs (run_id, tier, started_at, finished_at, recorded_at, source,
            git_commit, git_branch, git_dirty, evalrun_version, exit_code, interrupted, baseline, network)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING RETURNING pk"""),
        (run.run_id, run.tier, run.started_at, run.finished_at, run.recorded_at, run.source, run.git_commit,
         run.git_branch, _bool(run.git_dirty), run.evalrun_version, run.exit_code, int(run.interrupted),
         json.dumps(run.baseline), json.dumps(run.network) if run.network is not None else None),
    )
    row = cur.fetchone()
    if row is None:
        return False
    pk = row[0]
    eval_sql = _q(dialect, """INSERT INTO evalrun_evals (run_pk, name, status, duration_s, exit_code, message, models,
        tokens, metrics, experiment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""")
    check_sql = _q(dialect, """INSERT INTO evalrun_check_results (run_pk, check_pk, assertions, passed, runs, passes,
        message, evidence, judge) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""")
    for e in run.evals if evals is None else evals:
        cur.execute(eval_sql, (pk, e.name, e.status, e.duration_s, e.exit_code, e.message,
                               json.dumps(e.models) if e.models else None, e.tokens, json.dumps(e.metrics),
                               e.experiment))
        if e.checks:
            keys = [name_key(c.eval, c.name) for c in e.checks]
            ids = _name_ids(cur, dialect, keys, lambda i, checks=e.checks: (checks[i].eval, checks[i].name))
            cur.executemany(check_sql, ((pk, ids[key], c.assertions, int(c.passed), c.runs, c.passes, c.message,
                                         c.evidence, c.judge) for key, c in zip(keys, e.checks)))
    return True


_BATCH = 500  # keys per IN (...) lookup: well under SQLite's limit of bound parameters


def name_key(eval_name: str, check: str) -> str:
    """The stored key of a check name: a digest, so the unique index never holds 1,000-character names."""
    return hashlib.sha256(f"{len(eval_name)}:{eval_name}{check}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _name_ids(cur: Cursor, dialect: Dialect, keys: list[str], pair: Callable[[int], tuple[str, str]]) -> dict[str, Any]:
    """The row of each key (``pair(i)``: the eval and check name of ``keys[i]``), added if new.

    Added in key order, so two writers adding the same names never deadlock;
    built from generators, so an eval's checks are never copied whole again.
    """
    order = sorted(range(len(keys)), key=keys.__getitem__)
    cur.executemany(
        _q(dialect, "INSERT INTO evalrun_check_names (key, eval, name) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING"),
        ((keys[i], *pair(i)) for i in order),
    )
    ids: dict[str, Any] = {}
    for start in range(0, len(keys), _BATCH):
        batch = keys[start:start + _BATCH]
        marks = ", ".join([dialect.placeholder] * len(batch))
        cur.execute(f"SELECT key, pk FROM evalrun_check_names WHERE key IN ({marks})", batch)
        for key, row in cur:  # a row at a time: no list of them all
            ids[key] = row
    return ids


def _names_once(cur: Cursor, dialect: Dialect) -> None:
    """Migration 5's data: every stored check's name into evalrun_check_names, its rows into evalrun_check_results."""
    cur.execute("SELECT DISTINCT eval, name FROM evalrun_checks")
    pairs = [(ev, name) for ev, name in cur.fetchall()]
    for start in range(0, len(pairs), 10_000):
        chunk = pairs[start:start + 10_000]
        _name_ids(cur, dialect, [name_key(ev, name) for ev, name in chunk], chunk.__getitem__)
    cur.execute(
        "INSERT INTO evalrun_check_results (run_pk, check_pk, assertions, passed, runs, passes, message, evidence, "
        "judge) SELECT c.run_pk, n.pk, c.assertions, c.passed, c.runs, c.passes, c.message, c.evidence, c.judge "
        "FROM evalrun_checks c JOIN evalrun_check_names n ON n.eval = c.eval AND n.name = c.name"
    )


_RUN_COLUMNS = ("pk, run_id, tier, started_at, finished_at, recorded_at, source, git_commit, git_branch, git_dirty, "
                "evalrun_version, exit_code, interrupted, baseline, network")


def select_runs(cur: Cursor, dialect: Dialect, tier: str | None, last: int, shards: bool = False) -> list[StoredRun]:
    """The last ``last`` runs (of ``tier``, or of every tier), oldest first, with their evals and checks.

    Shard runs are left out unless asked for: each holds part of a run, and the merged run holds all of it.
    """
    conditions, params = (["tier = ?"], [tier]) if tier else ([], [])
    if not shards:
        conditions.append("source <> 'shard'")
    where = ("WHERE " + " AND ".join(conditions)) if conditions else ""
    cur.execute(
        _q(dialect, f"SELECT {_RUN_COLUMNS} FROM evalrun_runs {where} ORDER BY started_at DESC, pk DESC LIMIT ?"),
        (*params, last),
    )
    rows = list(reversed(cur.fetchall()))
    if not rows:
        return []
    pks = [r[0] for r in rows]
    marks = ", ".join([dialect.placeholder] * len(pks))
    cur.execute(
        f"SELECT r.run_pk, n.eval, n.name, r.assertions, r.passed, r.runs, r.passes, r.message, r.evidence, r.judge "
        f"FROM evalrun_check_results r JOIN evalrun_check_names n ON n.pk = r.check_pk "
        f"WHERE r.run_pk IN ({marks})",
        pks,
    )
    checks: dict[tuple[Any, str], list[StoredCheck]] = {}
    for pk, ev, name, assertions, passed, runs, passes, message, evidence, judge in cur.fetchall():
        checks.setdefault((pk, ev), []).append(
            StoredCheck(eval=ev, name=name, assertions=assertions, passed=bool(passed), runs=runs, passes=passes,
                        message=message, evidence=evidence, judge=judge))
    cur.execute(
        f"SELECT run_pk, name, status, duration_s, exit_code, message, models, tokens, metrics, experiment "
        f"FROM evalrun_evals "
        f"WHERE run_pk IN ({marks})",
        pks,
    )
    evals: dict[Any, list[StoredEval]] = {}
    for pk, name, status, duration, code, message, models, tokens, metrics, experiment in cur.fetchall():
        evals.setdefault(pk, []).append(
            StoredEval(
                name=name, experiment=experiment, status=status, duration_s=float(duration), exit_code=code,
                message=message,
                models=json.loads(models) if models else None, tokens=tokens, metrics=json.loads(metrics),
                checks=sorted(checks.get((pk, name), []), key=lambda c: c.name)))
    runs = []
    for (pk, run_id, tier_, started, finished, recorded, source, commit, branch, dirty, version, code, interrupted,
         baseline, network) in rows:
        runs.append(StoredRun(
            run_id=run_id, tier=tier_, started_at=started, finished_at=finished, recorded_at=recorded, source=source,
            git_commit=commit, git_branch=branch, git_dirty=None if dirty is None else bool(dirty),
            evalrun_version=version, exit_code=code, interrupted=bool(interrupted), baseline=json.loads(baseline),
            evals=sorted(evals.get(pk, []), key=lambda e: e.name), network=_json_object(network)))
    return runs


def _json_object(text: str | None) -> dict[str, Any] | None:
    """A stored JSON object; None for a null, or for anything else a hand-edited row may hold."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# The runs whose durations plan the next one: whole runs, as one machine or merged from shards. Never
# a single shard's: the shards of one CI run record while their siblings are still planning, and every
# shard must read the same durations to compute the same split (merge checks that they did).
_TIMED_SOURCES = ("run", "merge", "import")
_UNTIMED_STATUSES = ("skipped", "interrupted", "budget")  # never started, or stopped: no duration to go by


def select_durations(cur: Cursor, dialect: Dialect, tier: str, runs: int) -> list[tuple[str, float]]:
    """(eval, seconds) of the evals that ran in the tier's last ``runs`` whole runs, most recent first."""
    sources = ", ".join("'" + s + "'" for s in _TIMED_SOURCES)  # constants of this module: nothing to quote
    untimed = ", ".join("'" + s + "'" for s in _UNTIMED_STATUSES)
    cur.execute(
        _q(dialect,
           f"SELECT e.name, e.duration_s FROM evalrun_evals e JOIN evalrun_runs r ON r.pk = e.run_pk "
           f"WHERE r.pk IN (SELECT pk FROM evalrun_runs WHERE tier = ? AND source IN ({sources}) "
           f"ORDER BY started_at DESC, pk DESC LIMIT ?) AND e.status NOT IN ({untimed}) "
           f"ORDER BY r.started_at DESC, r.pk DESC"),
        (tier, runs),
    )
    return [(str(name), float(seconds)) for name, seconds in cur.fetchall()]


def _bool(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _q(dialect: Dialect, sql: str) -> str:
    # Statements are written with "?"; no literal contains one.
    return sql.replace("?", dialect.placeholder)
