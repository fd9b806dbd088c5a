"""Durations from the history plan the next run: the long eval starts first, and --shard auto balances by them."""

from __future__ import annotations

import json
import shutil

from harness.stub_projects import stub_project

# One long eval listed last, four short ones (seconds each scorer sleeps).
SLEEPS = {"a": 0.05, "b": 0.05, "c": 0.05, "d": 0.05, "long": 0.8}


def test_history_orders_the_run_longest_first_and_balances_auto_shards(project, tmp_path) -> None:
    proj = stub_project(project, {n: ("timed.py", f'env = {{ SLEEP = "{s}" }}') for n, s in SLEEPS.items()})
    marker = proj.root / "started.txt"
    history = {"EVALRUN_HISTORY_URL": f"sqlite:{tmp_path / 'cached' / 'history.sqlite'}", "MARKER": str(marker)}

    # Night 1: no durations anywhere yet, so manifest order; the history records each eval's duration.
    first = proj.run("t1", "-j", "2", env={**history, "WAIT_FOR": "b"})  # no third start before b's
    assert first.code == 0, first.output
    assert set(marker.read_text().split()[:2]) == {"a", "b"}  # two workers take the first two

    # Night 2: the long eval, listed last, starts first; the results file keeps plan order.
    marker.unlink()
    second = proj.run("t1", "-j", "2", env={**history, "WAIT_FOR": "long"})  # no third start before long's
    assert second.code == 0, second.output
    assert "long" in marker.read_text().split()[:2]
    assert [e["name"] for e in proj.results()["evals"]] == list(SLEEPS)

    # A GitLab job of two (1-based): the history balances the split, and the header says so and from where.
    gitlab = {**history, "CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "2"}
    split = {}
    for index in ("1", "2"):
        r = proj.run("t1", "--shard", "auto", env={**gitlab, "CI_NODE_INDEX": index})
        assert r.code == 0, r.output
        assert f"shard {index}/2 (GitLab: CI_NODE_INDEX={index}, CI_NODE_TOTAL=2), balanced by history (median of 2 runs" in r.out
        own = proj.root / ".evalrun" / "results" / f"t1.shard-{index}-of-2.json"  # named by the shard auto found
        shutil.copy(own, proj.root / f"shard{index}.json")
        split[index] = [e["name"] for e in json.loads(own.read_text())["evals"]]
    assert sorted([split["1"], split["2"]]) == [["a", "b", "c", "d"], ["long"]]  # by name it would be 3 and 2
    merged = proj.run("merge", "shard1.json", "shard2.json")
    assert merged.code == 0, merged.output

    # Without the history the last results file balances; with neither, names do, and each says which.
    empty = {"EVALRUN_HISTORY_URL": "sqlite:no-history-yet.sqlite"}  # planning never creates a history
    r = proj.run("dry", "t1", "--shard", "1/2", "--no-probe", env=empty)
    assert "shard 1/2, balanced by the last results file" in r.out, r.output
    (proj.root / ".evalrun" / "results" / "t1.json").unlink()
    r = proj.run("dry", "t1", "--shard", "1/2", "--no-probe", env=empty)
    assert "shard 1/2, split by name (round-robin)" in r.out, r.output
    assert not (proj.root / "no-history-yet.sqlite").exists()


def test_shard_auto_refuses_in_one_line(project) -> None:
    proj = stub_project(project, {"a": "pass.py"})
    for env, words in [
        ({}, "--shard auto: no CI shard variables are set"),
        ({"CIRCLE_NODE_INDEX": "4", "CIRCLE_NODE_TOTAL": "4"}, "CIRCLE_NODE_INDEX=4 is out of range for CIRCLE_NODE_TOTAL=4"),
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2", "BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "3"},
         "the variables disagree"),
    ]:
        r = proj.run("t1", "--shard", "auto", env=env)
        assert r.code == 2, r.output
        assert words in r.err and len(r.err.strip().splitlines()) == 1, r.err
        assert not (proj.root / ".evalrun" / "results").exists()
