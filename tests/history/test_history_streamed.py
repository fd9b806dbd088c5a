"""The history is written an eval at a time, yet a run lands whole or not at all, on SQLite and PostgreSQL.

``record_run`` streams ``eval_records`` into ``HistoryStore.append`` so that
a run of a million checks never sits in memory as records at once. These tests
show the stream is the same run as the whole record, and that a write which
dies half way (an exception, or the process SIGKILLed while the transaction is
open) leaves no run, no eval and no check behind. The kill is timed by the
writer saying where it is, never by a sleep.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrun.history import record_run
from evalrun.history.backends import open_store
from evalrun.history.location import HistoryLocation, parse_history_url
from evalrun.history.records import StoredEval, GitInfo, eval_records, make_record
from evalrun.manifest import load_manifest

from harness import HARNESS_PYTHONPATH, REPO, an_eval, manifest
from harness.history_data import big_results


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> HistoryLocation:
    if request.param == "sqlite":
        return parse_history_url(f"sqlite:{tmp_path / 'h' / 'history.sqlite'}", tmp_path, "test")
    return parse_history_url(request.getfixturevalue("postgres_database"), tmp_path, "test")


def row_counts(location: HistoryLocation) -> tuple[int, int, int]:
    """Rows in the three tables, read with the database's own client, not through the store."""
    queries = [f"SELECT count(*) FROM evalrun_{table}" for table in ("runs", "evals", "check_results")]
    if location.kind == "postgres":
        import psycopg

        with psycopg.connect(location.target) as conn:
            return tuple(conn.execute(q).fetchone()[0] for q in queries)  # type: ignore[return-value]
    import sqlite3

    conn = sqlite3.connect(location.target)
    try:
        return tuple(conn.execute(q).fetchone()[0] for q in queries)  # type: ignore[return-value]
    finally:
        conn.close()


def test_a_streamed_run_is_the_same_run_as_the_whole_record(store_location: HistoryLocation) -> None:
    results = big_results()
    whole = make_record(results, GitInfo(), "run", recorded_at="2026-12-01T04:00:00+00:00")
    header = make_record(results, GitInfo(), "run", recorded_at="2026-12-01T04:00:00+00:00", with_evals=False)
    assert header.evals == [] and header.run_id == whole.run_id
    store = open_store(store_location)
    try:
        assert store.append(header, eval_records(results)) is True
        assert store.append(header, eval_records(results)) is False  # the same run id is stored once
        [back] = store.runs("t1")
    finally:
        store.close()
    for record in whole.evals:
        record.checks.sort(key=lambda c: c.name)  # the store reads checks back by name
    assert back == whole
    assert row_counts(store_location) == (1, 4, 200)


def test_a_streamed_run_that_fails_half_way_leaves_nothing(store_location: HistoryLocation) -> None:
    results = big_results()
    header = make_record(results, GitInfo(), "run", with_evals=False)

    def dies_after_two() -> Iterator[StoredEval]:
        for index, record in enumerate(eval_records(results)):
            if index == 2:
                raise RuntimeError("the run died while its history was written")
            yield record

    store = open_store(store_location)
    try:
        with pytest.raises(RuntimeError):
            store.append(header, dies_after_two())
        assert store.runs("t1") == []
        assert row_counts(store_location) == (0, 0, 0)  # two evals and their checks were inserted, and rolled back
        assert store.append(header, eval_records(results)) is True  # the run id was not left taken
    finally:
        store.close()
    assert row_counts(store_location) == (1, 4, 200)


KILLED_WRITER = textwrap.dedent("""
    import sys
    from evalrun.history.backends import open_store
    from evalrun.history.location import parse_history_url
    from evalrun.history.records import GitInfo, eval_records, make_record
    from harness.history_data import big_results  # tests/ is on PYTHONPATH

    results = big_results()
    location = parse_history_url(sys.argv[1], __import__("pathlib").Path("."), "test")

    def stream():
        for index, record in enumerate(eval_records(results)):
            if index == 2:  # two evals are in the open transaction: say so, then wait to be killed
                print("half", flush=True)
                sys.stdin.readline()
            yield record

    store = open_store(location)
    store.append(make_record(results, GitInfo(), "run", with_evals=False), stream())
    print("appended", flush=True)
""")


def test_a_run_killed_while_its_history_is_written_leaves_nothing(
    store_location: HistoryLocation, tmp_path: Path
) -> None:
    open_store(store_location).close()  # the schema exists: only the run's rows are at stake
    script = tmp_path / "writer.py"
    script.write_text(KILLED_WRITER)
    url = store_location.target if store_location.kind == "postgres" else f"sqlite:{store_location.target}"
    proc = subprocess.Popen([sys.executable, str(script), url], cwd=REPO, env={**os.environ, "PYTHONPATH": HARNESS_PYTHONPATH},
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "half\n", proc.stderr.read() if proc.stderr else line
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    store = open_store(store_location)  # opens (and recovers) the store the killed writer left
    try:
        assert store.runs("t1") == []
    finally:
        store.close()
    assert row_counts(store_location) == (0, 0, 0)


def test_record_run_streams_every_check_of_every_eval(tmp_path: Path) -> None:
    (tmp_path / "manifest.toml").write_text(manifest(an_eval("e0", ["true"], dir="e"), tiers={"t1": {}}).text)
    (tmp_path / "e").mkdir()
    loaded = load_manifest(tmp_path / "manifest.toml")
    results = big_results(evals=3, checks=40)
    assert record_run(loaded, results, {}) is None
    location = parse_history_url(f"sqlite:{tmp_path / '.evalrun' / 'history.sqlite'}", tmp_path, "test")
    assert row_counts(location) == (1, 3, 120)
    store = open_store(location)
    try:
        [back] = store.runs("t1")
    finally:
        store.close()
    assert [(e.name, [(c.name, c.assertions) for c in e.checks]) for e in back.evals] == [
        (e.name, sorted(((c.name, c.assertions) for c in e.checks))) for e in results.evals
    ]


def test_a_streamed_write_holds_one_eval_of_records_at_a_time(tmp_path: Path) -> None:
    # Allocation is counted (tracemalloc), not timed: the same on any machine. Holding all 20 evals'
    # records at once, as the whole record does, would need about 20 times one eval's.
    import tracemalloc

    results = big_results(evals=20, checks=500)
    location = parse_history_url(f"sqlite:{tmp_path / 'history.sqlite'}", tmp_path, "test")
    header = make_record(results, GitInfo(), "run", with_evals=False)
    store = open_store(location)
    try:
        tracemalloc.start()
        whole = make_record(results, GitInfo(), "run")
        whole_size = tracemalloc.get_traced_memory()[0]
        del whole
        tracemalloc.stop()
        tracemalloc.start()
        store.append(header, eval_records(results))
        streamed_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        store.close()
    assert row_counts(location) == (1, 20, 10_000)
    assert streamed_peak < whole_size / 4, (streamed_peak, whole_size)
