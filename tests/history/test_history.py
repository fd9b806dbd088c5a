"""The history store: the same tests against SQLite and against a real (embedded) PostgreSQL.

Every test takes ``store_location`` (parametrized over both backends); the
PostgreSQL one is a fresh database in the session's one embedded cluster.
Concurrency is shown with two real processes that wait for each other before
appending, never with timings.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.history import record_run
from evalrun.history.location import HistoryLocation, locate_history, parse_history_url, redact_url
from evalrun.history.records import EVIDENCE_CHARS, GitInfo, make_record, read_git
from evalrun.reports_out.describe import stored_network_line
from evalrun.history.series import check_series, failing_since, ordered_for_attention
from evalrun.history.backends import open_store
from evalrun.history.sql import MIGRATIONS
from evalrun.history.store import HistoryError
from evalrun.manifest import load_manifest
from evalrun.results import CheckResult, EvalResult, NetworkIsolation, RunResults, Status

from harness import HARNESS_PYTHONPATH, REPO
from harness.history_data import results


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> HistoryLocation:
    if request.param == "sqlite":
        return parse_history_url(f"sqlite:{tmp_path / 'h' / 'history.sqlite'}", tmp_path, "test")
    url = request.getfixturevalue("postgres_database")
    return parse_history_url(url, tmp_path, "test")


def test_a_run_goes_in_and_comes_back_whole(store_location: HistoryLocation) -> None:
    run = replace(results(1, passed=False, evidence="row 17"), network=NetworkIsolation(
        isolated=False, reason="uid 1001 cannot create a network namespace; and no fallback: sk-SECRET1234 here"))
    record = make_record(run, GitInfo("a" * 40, "main", True), "run", secrets=["sk-SECRET1234"])
    store = open_store(store_location)
    try:
        assert store.append(record) is True
        assert store.append(record) is False  # the same run id is stored once
        [back] = store.runs("t1", 10)
    finally:
        store.close()
    assert back == record
    assert back.git_commit == "a" * 40 and back.git_branch == "main" and back.git_dirty is True
    alpha = back.evals[0]
    assert (alpha.status, alpha.tokens, alpha.metrics["latency_ms"]) == ("failed", 42, 101)
    assert alpha.checks[0].message == "expected 3, got 2" and alpha.checks[0].evidence == "row 17"
    assert alpha.checks[0].runs is None and alpha.checks[0].passes is None
    assert back.baseline["regressions"] == ['alpha: check "gone" vanished (baseline: 2 assertions)']
    assert back.counts() == {"passed": 0, "failed": 1, "skipped": 1}
    # whether the run was isolated from the network, and why not: redacted like every text a run stores
    assert back.network == {"isolated": False, "mechanism": None,
                            "reason": "uid 1001 cannot create a network namespace; and no fallback: [redacted by evalrun] here"}
    assert stored_network_line(back.network) == f"network: not isolated: {back.network['reason']}"  # the page's line


def test_runs_are_the_last_n_of_a_tier_oldest_first(store_location: HistoryLocation) -> None:
    store = open_store(store_location)
    try:
        for n in range(5):
            store.append(make_record(results(n), GitInfo(), "run"))
        store.append(make_record(results(9, tier="t2"), GitInfo(), "run"))
        last3 = store.runs("t1", 3)
        every = store.runs(None, 100)
    finally:
        store.close()
    assert [r.started_at[14:19] for r in last3] == ["00:02", "00:03", "00:04"]
    assert len(every) == 6 and every[-1].tier == "t2"


WRITER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from harness.history_data import results  # tests/ is on PYTHONPATH
    from evalrun.history.location import parse_history_url
    from evalrun.history.records import GitInfo, make_record
    from evalrun.history.backends import open_store
    me, other, url = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    store = open_store(parse_history_url(url, Path("."), "test"))
    me.write_text("ready")
    deadline = time.monotonic() + 60
    while not other.exists() and time.monotonic() < deadline:  # start together: both write at once
        time.sleep(0.01)
    base = int(sys.argv[4])
    for n in range(base, base + 25):
        assert store.append(make_record(results(n), GitInfo(), "run"))
    store.close()
""")


def test_two_writers_at_once_lose_nothing(store_location: HistoryLocation, tmp_path: Path) -> None:
    open_store(store_location).close()  # create first, so both writers race on appends, not only on creation
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    a, b = tmp_path / "a.ready", tmp_path / "b.ready"
    url = store_location.target if store_location.kind == "postgres" else f"sqlite:{store_location.target}"
    procs = [subprocess.Popen([sys.executable, str(script), str(me), str(other), url, str(base)], cwd=REPO,
                              env={**os.environ, "PYTHONPATH": HARNESS_PYTHONPATH}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for me, other, base in ((a, b, 0), (b, a, 100))]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    store = open_store(store_location)
    try:
        runs = store.runs("t1", 1000)
    finally:
        store.close()
    assert len(runs) == 50 and len({r.run_id for r in runs}) == 50
    assert all(len(r.evals) == 2 and len(r.evals[0].checks) == 2 for r in runs)


def test_an_old_schema_is_migrated_on_open_and_keeps_its_runs(store_location: HistoryLocation) -> None:
    if store_location.kind == "postgres":
        from evalrun.history.postgres import PostgresStore as Store
    else:
        from evalrun.history.sqlite import SqliteStore as Store
    old = Store(store_location, target_version=1)  # what the first released evalrun created
    run = results(1)
    run = replace(run, evals=[replace(run.evals[0], name="alpha[mini]", experiment="mini"), *run.evals[1:]])
    record = make_record(run, GitInfo("b" * 40, "main", False), "run")
    old.close()
    store = open_store(store_location)  # migrates 1 -> current
    try:
        store.append(record)
        [back] = store.runs("t1", 5)
        assert back.evals[0].checks[0].runs is None  # the column migration 2 added
        by_name = {e.name: e for e in back.evals}
        assert by_name["alpha[mini]"].experiment == "mini"  # the column migration 3 added
        assert by_name["beta"].experiment is None
    finally:
        store.close()
    assert back.evals[0].checks[0].judge is None  # the column migration 4 added
    assert back.network is None and stored_network_line(back.network) is None  # migration 6's column: a run without it is unknown
    assert schema_version(store_location) == 6


def test_a_schema_newer_than_evalrun_is_refused_in_one_line(store_location: HistoryLocation) -> None:
    open_store(store_location).close()
    set_schema_version(store_location, 99)
    with pytest.raises(HistoryError, match=r"history schema version 99 is newer than this evalrun's \(6\); upgrade"):
        open_store(store_location)


def schema_version(location: HistoryLocation) -> int:
    if location.kind == "postgres":
        import psycopg

        with psycopg.connect(location.target) as conn:
            return conn.execute("SELECT version FROM evalrun_schema").fetchone()[0]
    import sqlite3

    with sqlite3.connect(location.target) as conn:
        return conn.execute("SELECT version FROM evalrun_schema").fetchone()[0]


def set_schema_version(location: HistoryLocation, version: int) -> None:
    if location.kind == "postgres":
        import psycopg

        with psycopg.connect(location.target) as conn:
            conn.execute("UPDATE evalrun_schema SET version = %s", (version,))
        return
    import sqlite3

    conn = sqlite3.connect(location.target)
    conn.execute("UPDATE evalrun_schema SET version = ?", (version,))
    conn.commit()
    conn.close()


# ---------------------------------------------------------------- record_run: never fatal, never leaks


def manifest_at(tmp_path: Path, history: str = "") -> object:
    (tmp_path / "manifest.toml").write_text(f"[tiers.t1]\n{history}\n", encoding="utf-8")
    return load_manifest(tmp_path / "manifest.toml")


def test_record_run_writes_the_default_sqlite_and_a_gitignore(tmp_path: Path) -> None:
    manifest = manifest_at(tmp_path)
    assert record_run(manifest, results(1), {}) is None
    assert (tmp_path / ".evalrun" / ".gitignore").read_text().splitlines()[-1] == "*"
    store = open_store(locate_history(manifest, {}))
    try:
        assert [r.source for r in store.runs("t1")] == ["run"]
    finally:
        store.close()


def test_history_disabled_writes_no_database(tmp_path: Path) -> None:
    manifest = manifest_at(tmp_path, "[history]\nenabled = false")
    assert record_run(manifest, results(1), {}) is None
    assert not (tmp_path / ".evalrun" / "history.sqlite").exists()
    assert (tmp_path / ".evalrun" / ".gitignore").exists()


def test_a_database_that_is_down_is_a_warning_without_the_password(tmp_path: Path) -> None:
    from evalrun.services.postgres import free_port

    password = "s3cret-" + os.urandom(4).hex()
    manifest = manifest_at(tmp_path, '[history]\nurl = "postgresql://ci:${HIST_PW}@127.0.0.1:' + str(free_port()) + '/h"')
    warning = record_run(manifest, results(1), {"HIST_PW": password})
    assert warning is not None and warning.startswith("history: not recorded: postgresql://ci:***@127.0.0.1:")
    assert password not in warning and "\n" not in warning


def test_an_unwritable_history_file_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where a folder should be")
    manifest = manifest_at(tmp_path, '[history]\nurl = "sqlite:blocker/history.sqlite"')
    warning = record_run(manifest, results(1), {})
    assert warning is not None and warning.startswith(f"history: not recorded: {tmp_path / 'blocker'}")


def test_an_unset_variable_in_the_url_is_named_in_the_warning(tmp_path: Path) -> None:
    manifest = manifest_at(tmp_path, '[history]\nurl = "${NOPE_URL}"')
    warning = record_run(manifest, results(1), {})
    assert warning == ("history: not recorded: manifest.toml: history.url: uses ${NOPE_URL}, which is not set; "
                       "export it or set EVALRUN_HISTORY_URL") or "uses ${NOPE_URL}, which is not set" in str(warning)


def test_the_environment_variable_wins_over_the_manifest(tmp_path: Path) -> None:
    manifest = manifest_at(tmp_path, '[history]\nurl = "sqlite:from-manifest.sqlite"')
    location = locate_history(manifest, {"EVALRUN_HISTORY_URL": "sqlite:from-env.sqlite"})
    assert location is not None and location.target == str(tmp_path / "from-env.sqlite")


@pytest.mark.parametrize("body, message", [
    ('[history]\nurl = "mysql://x"', "history.url: must start with postgresql://, postgres:// or sqlite:"),
    ('[history]\nenabled = "yes"', "history.enabled: must be true or false"),
    ('[history]\nurls = "x"', "history.urls: unknown key"),
])
def test_a_bad_history_table_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    from evalrun.errors import ManifestError

    with pytest.raises(ManifestError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
        manifest_at(tmp_path, body)
    assert "\n" not in str(info.value)


def test_evidence_is_redacted_before_it_is_cut(tmp_path: Path) -> None:
    key = "sk-test-" + os.urandom(8).hex()
    evidence = "x" * (EVIDENCE_CHARS - 10) + key + "y" * 100
    record = make_record(results(1, passed=False, evidence=evidence), GitInfo(), "run", {key})
    stored = record.evals[0].checks[0].evidence
    assert stored is not None and len(stored) == EVIDENCE_CHARS
    assert key not in stored and key[:12] not in stored


@given(user=st.text(alphabet="abcdefgh", min_size=1, max_size=8),
       password=st.text(alphabet=st.characters(blacklist_characters="@/?#", blacklist_categories=("Cs",)),
                        min_size=4, max_size=20))
@settings(max_examples=200, deadline=None)
def test_redact_url_never_shows_the_password(user: str, password: str) -> None:
    from urllib.parse import quote

    password = "Zq9" + password  # a marker the rest of the URL never contains
    shown = redact_url(f"postgresql://{user}:{quote(password, safe='')}@db.example:5432/h?password={quote(password)}")
    assert "Zq9" not in shown
    assert shown.startswith(f"postgresql://{user}:***@db.example:5432/h")


# ---------------------------------------------------------------- series


def test_failing_since_names_the_first_bad_run_and_the_last_good_commit() -> None:
    runs = []
    for n, (passed, commit) in enumerate([(True, "c1"), (True, "c2"), (False, "c3"), (False, "c4")]):
        runs.append(make_record(results(n, passed=passed), GitInfo(commit * 20, "main", False), "run"))
    [one] = check_series(runs, "alpha", "one")
    since = failing_since(one)
    assert since is not None and since.first_bad is runs[2] and since.last_good is runs[1]
    assert since.describe() == f"failing since {runs[2].run_id} (commit c3c3c3c3c3; last passed at commit c2c2c2c2c2)"
    [two] = check_series(runs, "alpha", "two")
    assert failing_since(two) is None and two.pass_rate == 1.0


def test_flaky_and_newly_failing_checks_come_first() -> None:
    pattern = [True, False, True, True, False]  # "one" flips 3 times at one commit and fails now after a pass
    runs = [make_record(results(n, passed=p), GitInfo("ab" * 20, "main", False), "run") for n, p in enumerate(pattern)]
    series = ordered_for_attention(check_series(runs))
    assert [(s.check, s.newly_failing, s.flaky) for s in series] == [("one", True, True), ("two", False, False)]
    assert series[0].pass_rate == pytest.approx(3 / 5)


def test_read_git_outside_a_repository_is_empty(tmp_path: Path) -> None:
    assert read_git(tmp_path) == GitInfo()


def test_read_git_in_a_repository(tmp_path: Path) -> None:
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "trunk"], cwd=tmp_path, check=True)
    (tmp_path / "f").write_text("1")
    subprocess.run([*git, "add", "f"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=tmp_path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert read_git(tmp_path) == GitInfo(head, "trunk", False)
    (tmp_path / "f").write_text("2")
    assert read_git(tmp_path) == GitInfo(head, "trunk", True)


@given(url=st.text(max_size=80))
@settings(max_examples=300, deadline=None)
def test_any_history_url_is_a_location_or_one_line_error(url: str) -> None:
    from evalrun.errors import ManifestError

    try:
        location = parse_history_url(url, Path("/r"), "manifest.toml: history.url")
    except ManifestError as exc:
        assert "\n" not in str(exc)
        return
    assert location.kind in ("sqlite", "postgres")
    if location.kind == "postgres":
        assert isinstance(location.shown, str)


# ---------------------------------------------------------------- bounded on disk: names once, text per run capped


def _wide_results(n: int, names: list[str], *, failing: bool = False) -> RunResults:
    return RunResults(
        evalrun_version="0.1.0", tier="t1", manifest="manifest.toml",
        started_at=f"2026-12-01T04:00:{n:02d}+00:00", finished_at=f"2026-12-01T04:00:{n:02d}+00:00", exit_code=0,
        evals=[EvalResult(name="wide", tier="t1", dir="evals/wide", status=Status.FAILED if failing else Status.PASSED,
                          checks=[CheckResult(name=name, assertions=1, passed=not failing,
                                              message="m" * 2_000 if failing else None,
                                              evidence="e" * 4_000 if failing else None) for name in names])],
    )


def _stored_bytes(location: HistoryLocation) -> int:
    if location.kind == "postgres":
        import psycopg

        with psycopg.connect(location.target) as conn:
            return conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    import sqlite3

    with sqlite3.connect(location.target) as conn:  # the WAL folded in: the file alone
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return Path(location.target).stat().st_size


def test_long_check_names_are_stored_once_not_once_per_run(store_location: HistoryLocation) -> None:
    """1,000 checks with 1,000-character names, four runs: the names cost once; a run adds ints, not names."""
    names = [f"{i:04d}-" + "n" * 995 for i in range(1_000)]
    store = open_store(store_location)
    try:
        store.append(make_record(_wide_results(0, names), GitInfo(), "run"))
        first = _stored_bytes(store_location)
        for n in range(1, 4):
            store.append(make_record(_wide_results(n, names), GitInfo(), "run"))
        [*_, back] = store.runs("t1", 10)
    finally:
        store.close()
    per_run = (_stored_bytes(store_location) - first) / 3
    assert per_run < 150 * len(names), f"{per_run:.0f} bytes per run for {len(names)} checks"  # ~1 KB a name, once
    assert [c.name for c in back.evals[0].checks] == names


def test_a_runs_messages_and_evidence_are_capped_in_the_history(tmp_path: Path) -> None:
    from evalrun.history.records import RUN_TEXT_CHARS

    names = [f"c{i:05d}" for i in range(2_000)]
    record = make_record(_wide_results(0, names, failing=True), GitInfo(), "run")
    checks = record.evals[0].checks
    kept = sum(len(c.message or "") + len(c.evidence or "") for c in checks)
    assert kept <= RUN_TEXT_CHARS + 200 * len(checks)
    assert checks[0].evidence == "e" * 4_000  # the first failures keep their evidence (up to 4,000 characters)
    assert checks[-1].evidence is None and "results file" in (checks[-1].message or "")


def test_checks_stored_before_names_were_kept_once_survive_the_migration(store_location: HistoryLocation) -> None:
    """A version-4 history (names in every check row) is moved into names-once on open, every check kept."""
    if store_location.kind == "postgres":
        from evalrun.history.postgres import PostgresStore as Store

        mark = "%s"
    else:
        from evalrun.history.sqlite import SqliteStore as Store

        mark = "?"
    old = Store(store_location, target_version=4)
    q = lambda text: text.replace("?", mark)  # noqa: E731
    try:
        for run_id, pk_hint in (("r1", "2026-12-01T01:00:00+00:00"), ("r2", "2026-12-01T02:00:00+00:00")):
            old._conn.execute(q("INSERT INTO evalrun_runs (run_id, tier, started_at, recorded_at, source, evalrun_version, "
                                "interrupted, baseline) VALUES (?, 't1', ?, ?, 'run', '0', 0, '{}')"),
                              (run_id, pk_hint, pk_hint))
            pk = old._conn.execute(q("SELECT pk FROM evalrun_runs WHERE run_id = ?"), (run_id,)).fetchone()[0]
            old._conn.execute(q("INSERT INTO evalrun_evals (run_pk, name, status, duration_s, metrics) "
                                "VALUES (?, 'alpha', 'passed', 1.0, '{}')"), (pk,))
            for name, count in (("one", 3), ("a long name " * 50, 1)):
                old._conn.execute(q("INSERT INTO evalrun_checks (run_pk, eval, name, assertions, passed, evidence, "
                                    "judge) VALUES (?, 'alpha', ?, ?, 1, ?, 'm#1')"), (pk, name, count, f"ev {run_id}"))
    finally:
        old.close()
    store = open_store(store_location)  # migrates 4 -> 5 (and on)
    try:
        runs = store.runs("t1", 10)
    finally:
        store.close()
    assert [r.run_id for r in runs] == ["r1", "r2"]
    for run in runs:
        checks = {c.name: (c.assertions, c.evidence) for c in run.evals[0].checks}
        assert checks == {"one": (3, f"ev {run.run_id}"), "a long name " * 50: (1, f"ev {run.run_id}")}
        assert {c.judge for c in run.evals[0].checks} == {"m#1"}
    assert schema_version(store_location) == len(MIGRATIONS)


def test_durations_are_the_whole_runs_of_the_tier_most_recent_first(store_location: HistoryLocation) -> None:
    """What plans the next run (evalrun.selection.timings): whole and merged runs, never one shard's, nor a
    skipped eval's zero, nor another tier's."""
    def timed(n: int, seconds: float, source: str, tier: str = "t1") -> None:
        run = results(n, tier=tier)
        run.evals[0].duration_s = seconds
        store.append(make_record(run, GitInfo(), source))

    store = open_store(store_location)
    try:
        timed(1, 4.0, "run")
        timed(2, 6.0, "merge")
        timed(3, 99.0, "shard")  # a shard records while its siblings plan: never read
        timed(4, 50.0, "run", tier="t2")
        timed(5, 5.0, "import")
        rows = store.durations("t1", 60)
        assert store.durations("t1", 1) == [("alpha", 5.0)]  # the last whole run only
    finally:
        store.close()
    assert rows == [("alpha", 5.0), ("alpha", 6.0), ("alpha", 4.0)]  # beta was skipped: no duration to go by
