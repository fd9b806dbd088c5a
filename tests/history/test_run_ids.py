"""A run's id in the history: two distinct runs are two runs, one results file imported twice is one.

A run writes its own ``run_id`` into its results file when it is made, and the
history uses it; so two runs of one tier in the same second with the same
results (durations included) are still two runs. Files from an older evalrun
(no ``run_id``) still import, with the old id: the run's start to the second,
its tier and a hash of its content. Shown without timing: two results files
that differ only in ``run_id``; and through the real CLI.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from evalrun.history.backends import open_store
from evalrun.history.location import HistoryLocation, parse_history_url
from evalrun.history.records import GitInfo, make_record, run_id_for
from evalrun.results import RunResults, validate_results

from harness import eval_entry, json_scorer
from harness.history_data import big_results, results

HISTORY = "\n[history]\nurl = \"sqlite:h.sqlite\"\n"
MANIFEST = "[tiers.t1]\n" + eval_entry("a") + HISTORY
SCORER = json_scorer([{"name": "one", "assertions": 1, "passed": True}])
RUN_ID = re.compile(r"^\d{8}T\d{6}-t1-[0-9a-f]{8}$")


@pytest.fixture(params=["sqlite", "postgres"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> HistoryLocation:
    if request.param == "sqlite":
        return parse_history_url(f"sqlite:{tmp_path / 'history.sqlite'}", tmp_path, "test")
    return parse_history_url(request.getfixturevalue("postgres_database"), tmp_path, "test")


def make(project):
    return project({"manifest.toml": MANIFEST, "evals/a/score.py": SCORER})


def history_runs(p) -> list[dict]:
    shown = p.run("history", "--json")
    assert shown.code == 0, shown.output
    return json.loads(shown.out)["runs"]


def test_a_run_writes_its_history_id_into_its_results_file(project) -> None:
    p = make(project)
    assert p.run("t1", "--json", "a.json").code == 0
    assert p.run("t1", "--json", "b.json").code == 0  # the same tier again at once: the same results, most likely the same second
    ids = [json.loads((p.root / name).read_text())["run_id"] for name in ("a.json", "b.json")]
    assert all(RUN_ID.match(i) for i in ids) and ids[0] != ids[1], ids
    assert [r["run_id"] for r in history_runs(p)] == ids  # two runs, each under the id its file names


def test_two_files_that_differ_only_in_run_id_are_two_runs_and_each_imports_once(project) -> None:
    p = make(project)
    assert p.run("t1", "--json", "a.json").code == 0
    (p.root / "h.sqlite").unlink()  # forget the run; import it back, with a twin made in the same second
    text = (p.root / "a.json").read_text()
    first = json.loads(text)["run_id"]
    twin = first[:-8] + ("0" * 8 if first[-8:] != "0" * 8 else "1" * 8)
    (p.root / "b.json").write_text(text.replace(f'"run_id": "{first}"', f'"run_id": "{twin}"'))
    assert json.loads((p.root / "b.json").read_text())["run_id"] == twin  # the only difference
    imported = p.run("history", "import", "a.json", "b.json")
    assert imported.code == 0 and imported.out.count("imported ") == 2, imported.output
    assert f"({first})" in imported.out and f"({twin})" in imported.out
    again = p.run("history", "import", "a.json", "b.json")
    assert again.code == 0 and again.out.count("already in the history: ") == 2, again.output
    assert [r["run_id"] for r in history_runs(p)] == [first, twin]


def test_a_results_file_without_run_id_imports_under_its_content_id(project) -> None:
    """An older evalrun's file: ``started_at`` to the second, the tier, and the first 8 hex of its content's sha256."""
    from evalrun.results import results_json_pieces

    p = make(project)
    assert p.run("t1", "--json", "a.json").code == 0
    (p.root / "h.sqlite").unlink()
    data = json.loads((p.root / "a.json").read_text())
    del data["run_id"]
    old = validate_results(data)
    (p.root / "old.json").write_text("".join(results_json_pieces(old)))  # written as that evalrun wrote it
    assert "run_id" not in (p.root / "old.json").read_text()
    content = hashlib.sha256((p.root / "old.json").read_bytes()).hexdigest()[:8]
    stamp = re.sub(r"[^0-9T]", "", data["started_at"][:19])
    expected = f"{stamp}-t1-{content}"
    imported = p.run("history", "import", "old.json")
    assert imported.code == 0 and f"imported old.json ({expected})" in imported.out, imported.output
    again = p.run("history", "import", "old.json")
    assert f"already in the history: old.json ({expected})" in again.out, again.output
    assert [r["run_id"] for r in history_runs(p)] == [expected]


def test_a_run_id_that_is_no_id_is_one_line_and_exit_2(project) -> None:
    p = make(project)
    assert p.run("t1", "--json", "a.json").code == 0
    data = json.loads((p.root / "a.json").read_text())
    data["run_id"] = "x\n::error::y"
    (p.root / "bad.json").write_text(json.dumps(data))
    bad = p.run("history", "import", "bad.json")
    assert bad.code == 2 and bad.err.count("\n") == 1 and "bad.json: run_id:" in bad.err, bad.output
    assert "::error::" not in bad.output


def test_merging_the_same_shards_twice_is_one_merged_run(project) -> None:
    files = {"manifest.toml": "[tiers.t1]\n" + eval_entry("a") + eval_entry("b") + HISTORY}
    for n in ("a", "b"):
        files[f"evals/{n}/score.py"] = json_scorer([{"name": f"{n} works", "assertions": 1, "passed": True}])
    p = project(files)
    for i in (1, 2):
        assert p.run("t1", "--shard", f"{i}/2", "--json", f"s{i}.json").code == 0
    for out in ("m1.json", "m2.json"):
        merged = p.run("merge", "s1.json", "s2.json", "--json", out)
        assert merged.code == 0, merged.output
    ids = {json.loads((p.root / name).read_text())["run_id"] for name in ("m1.json", "m2.json")}
    assert len(ids) == 1 and RUN_ID.match(next(iter(ids))), ids
    assert [(r["source"], r["run_id"]) for r in history_runs(p)] == [("merge", next(iter(ids)))]


def test_the_same_results_in_the_same_second_under_two_run_ids_are_two_runs(store_location: HistoryLocation) -> None:
    one = replace(results(1), run_id="20261201T030001-t1-00000001")
    two = replace(results(1), run_id="20261201T030001-t1-00000002")
    store = open_store(store_location)
    try:
        assert store.append(make_record(one, GitInfo(), "run")) is True
        assert store.append(make_record(two, GitInfo(), "run")) is True  # the same content: still a run of its own
        assert store.append(make_record(one, GitInfo(), "import")) is False  # the first one again: already there
        runs = store.runs("t1", 10)
    finally:
        store.close()
    assert [r.run_id for r in runs] == ["20261201T030001-t1-00000001", "20261201T030001-t1-00000002"]


def test_results_without_run_id_keep_the_id_the_previous_evalrun_gave_them() -> None:
    """Pinned: what evalrun computed before results carried a run id. A file recorded then and imported now is
    the same run; if this fails, a field added to the results file changed how an old file is written back."""
    def old(made: RunResults) -> RunResults:  # that evalrun wrote results version 2
        return replace(made, version=2)

    assert run_id_for(old(results(1))) == "20261201T030001-t1-a70846c5"
    assert run_id_for(old(results(7, passed=False, tier="t2"))) == "20261201T030007-t2-5ca9df47"
    assert run_id_for(old(big_results())) == "20261201T030000-t1-e21c50b8"
