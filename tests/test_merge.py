"""evalrun merge: shards run through the real pipeline, merged, compared and judged as one run."""

from __future__ import annotations

import io
import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from evalrun.run.context import RunContext
from evalrun.run.collect import collect
from evalrun.run.requests import CollectOptions
from harness.session import make_session
from evalrun.reports_out.terminal import Console
from evalrun.errors import ResultsError, UsageError
from evalrun.manifest import load_manifest
from evalrun.baseline import baseline_path, load_baseline
from evalrun.merge import merge_results
from evalrun.run.pipeline import judge
from evalrun.plan import make_plan
from evalrun.results import EvalResult, RunResults, Status, load_results, write_results
from evalrun.selection.shards import Shard, select_shard
from harness import an_eval, manifest, warm_evalrun
from harness.git import write

NAMES = ["alpha", "beta", "gamma", "delta", "eps"]


def _scorer(assertions: int) -> str:
    report = {"checks": [{"name": "works", "assertions": assertions, "passed": True}]}
    return f"import json, os\njson.dump({report!r}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """Five passing t1 evals, one t2 eval, and a t1 baseline in which gamma asserted more."""
    tagged = (an_eval(n, tags=[t], files={"score.py": _scorer(1)}) for n, t in zip(NAMES, ["x", "y", "x", "y", "x"]))
    baseline = "".join(f'[{n}]\nworks = {3 if n == "gamma" else 1}\n\n' for n in NAMES)
    write(tmp_path, manifest(*tagged, an_eval("other", tier="t2", files={"score.py": _scorer(1)})).project(
        {"baselines/t1.toml": baseline}))
    return tmp_path


def run_shard(root: Path, shard: Shard, tags: list[str] | None = None, tier: str = "t1") -> Path:
    """One shard through the real pipeline (real scorer subprocesses), written where CI would upload it."""
    manifest = load_manifest(root / "manifest.toml")
    plan = select_shard(make_plan(manifest, tier, [], tags or []), shard, None)
    context = RunContext.build(make_session(root / "manifest.toml"), tier, manifest)
    results = collect(context, plan, CollectOptions(jobs=2), Console(io.StringIO(), env={}))
    path = root / "shards" / f"{tier}-{shard.index}-of-{shard.total}.json"
    write_results(results, path)
    return path


def test_two_shards_merge_to_the_exact_union_and_judge_like_one_run(suite: Path) -> None:
    paths = [run_shard(suite, Shard(i, 2)) for i in (1, 2)]
    manifest = load_manifest(suite / "manifest.toml")
    merged = finish_merged(merge_results(paths, manifest, "t1"), manifest)
    assert [e.name for e in merged.evals] == NAMES  # manifest order, each once
    assert all(e.status is Status.PASSED for e in merged.evals)
    assert [c.kind for c in merged.baseline.regressions] == ["weakened"]
    assert merged.exit_code == 3
    assert merged.selection["filtered_out"] == [] and len(merged.selection["shards"]) == 2
    # The same suite unsharded, through the real CLI, decides the same.
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_")}
    whole = warm_evalrun(suite, "t1", env=env, timeout=120)
    assert whole.returncode == merged.exit_code, whole.stdout + whole.stderr
    assert json.loads((suite / ".evalrun/results/t1.json").read_text())["baseline"]["regressions"] == [
        asdict(c) for c in merged.baseline.regressions
    ]


def test_a_missing_shard_is_an_error_never_a_green_run(suite: Path) -> None:
    (suite / "baselines/t1.toml").unlink()
    paths = [run_shard(suite, Shard(i, 3)) for i in (1, 3)]
    with pytest.raises(ResultsError, match=r"^merge: shard 2/3 is missing \(have 1/3, 3/3\); a shard failed"):
        merge_results(paths, load_manifest(suite / "manifest.toml"), "t1")


def _fake_shard(root: Path, label: str, evals: list[str], shard: str, tier: str = "t1", **selection) -> Path:
    """A results file as a shard writes it; plain data, for the cases a real run cannot produce."""
    results = RunResults(
        evalrun_version="0.1.0", tier=tier, manifest="manifest.toml", started_at=f"2026-01-01T00:00:0{label}+00:00",
        finished_at=f"2026-01-01T00:01:0{label}+00:00",
        selection={"evals": [], "tags": [], "shard": [shard], **selection},
        evals=[EvalResult(name=n, tier=tier, dir=f"evals/{n}", status=Status.PASSED) for n in evals],
    )
    path = root / "shards" / f"{label}.json"
    write_results(results, path)
    return path


def test_shards_split_with_different_durations_are_refused(suite: Path) -> None:
    manifest = load_manifest(suite / "manifest.toml")
    plan = make_plan(manifest, "t1", [], [])
    first = select_shard(plan, Shard(1, 2), None)
    second = select_shard(plan, Shard(2, 2), {"alpha": 9.0, "beta": 1.0})  # this machine had a results file
    paths = [_fake_shard(suite, str(i), [p.name for p in part.evals], f"{i}/2", shard_split=part.filters["shard_split"])
             for i, part in enumerate([first, second], start=1)]
    with pytest.raises(ResultsError, match=r"split the evals differently .*; run every shard from the same commit"):
        merge_results(paths, manifest, "t1")


def test_an_eval_in_no_shard_is_named(suite: Path) -> None:
    paths = [_fake_shard(suite, "1", ["alpha", "gamma"], "1/2"), _fake_shard(suite, "2", ["beta", "eps"], "2/2")]
    with pytest.raises(ResultsError, match=r'^merge: eval "delta" of t1 is in no shard\'s results; a shard is '
                                           r"missing or failed to upload$"):
        merge_results(paths, load_manifest(suite / "manifest.toml"), "t1")


def test_an_eval_in_two_shards_is_an_error(suite: Path) -> None:
    paths = [_fake_shard(suite, "1", ["alpha", "beta", "gamma"], "1/2"),
             _fake_shard(suite, "2", ["beta", "delta", "eps"], "2/2")]
    with pytest.raises(ResultsError, match=r'^merge: eval "beta" is in both .*1.json and .*2.json; shards must not'):
        merge_results(paths, load_manifest(suite / "manifest.toml"), "t1")


def test_mixed_tiers_are_an_error(suite: Path) -> None:
    paths = [_fake_shard(suite, "1", NAMES, "1/2"), _fake_shard(suite, "2", ["other"], "2/2", tier="t2")]
    with pytest.raises(ResultsError, match=r"^merge: .*2.json: results of tier t2, not t1; merge the files of one"):
        merge_results(paths, load_manifest(suite / "manifest.toml"))


@pytest.mark.parametrize(
    ("shards", "message"),
    [
        ([("alpha beta gamma", "1/2"), ("delta eps", "1/2")], r"are both shard 1/2; pass each shard's results once"),
        ([("alpha beta gamma", "1/2"), ("delta eps", "2/3")], r"is one of 2 shards but .* is one of 3; run every"),
        ([("alpha beta gamma", "1/2"), ("delta eps", "")], r"2.json: no shard record, it was not run with --shard"),
        ([("alpha beta gamma", "1/2"), ("delta eps other", "2/2")], r'eval "other" in .*2.json is not planned for t1'),
    ],
)
def test_shards_that_do_not_add_up_are_refused(suite: Path, shards, message: str) -> None:
    paths = [_fake_shard(suite, str(i), names.split(), shard) for i, (names, shard) in enumerate(shards, start=1)]
    with pytest.raises(ResultsError, match=message):
        merge_results(paths, load_manifest(suite / "manifest.toml"), "t1")


def test_shards_run_with_different_filters_are_refused(suite: Path) -> None:
    paths = [_fake_shard(suite, "1", ["alpha", "gamma"], "1/2", tags=["x"]),
             _fake_shard(suite, "2", ["eps"], "2/2", tags=["y"])]
    with pytest.raises(ResultsError, match=r"were run with different tags \(x vs y\); run every shard with the same"):
        merge_results(paths, load_manifest(suite / "manifest.toml"), "t1")


def test_filters_the_shards_agree_on_narrow_what_must_be_covered(suite: Path) -> None:
    paths = [run_shard(suite, Shard(i, 2), tags=["x"]) for i in (1, 2)]
    manifest = load_manifest(suite / "manifest.toml")
    merged = merge_results(paths, manifest, "t1")
    assert [e.name for e in merged.evals] == ["alpha", "gamma", "eps"]
    assert merged.selection["filtered_out"] == ["beta", "delta"] and merged.selection["tags"] == ["x"]
    assert finish_merged(merged, manifest).baseline.not_compared == ["beta", "delta"]


def test_changed_only_shards_cover_what_changed(suite: Path) -> None:
    unchanged = {"unchanged": ["beta", "delta"], "changed_since": ["origin/main"]}
    paths = [_fake_shard(suite, "1", ["alpha", "eps"], "1/2", **unchanged),
             _fake_shard(suite, "2", ["gamma"], "2/2", **unchanged)]
    merged = merge_results(paths, load_manifest(suite / "manifest.toml"), "t1")
    assert [e.name for e in merged.evals] == ["alpha", "gamma", "eps"]


def test_an_interrupted_shard_makes_the_merge_interrupted(suite: Path) -> None:
    paths = [_fake_shard(suite, "1", ["alpha", "beta", "gamma"], "1/2"),
             _fake_shard(suite, "2", ["delta", "eps"], "2/2")]
    data = json.loads(paths[1].read_text())
    data.update(interrupted=True, finished_at=None)
    paths[1].write_text(json.dumps(data))
    manifest = load_manifest(suite / "manifest.toml")
    merged = finish_merged(merge_results(paths, manifest, "t1"), manifest)
    assert merged.interrupted and merged.finished_at is None and merged.exit_code == 130
    assert merged.started_at == "2026-01-01T00:00:01+00:00"


def test_unreadable_or_repeated_files_are_one_line_errors(suite: Path) -> None:
    good = _fake_shard(suite, "1", NAMES, "1/1")
    manifest = load_manifest(suite / "manifest.toml")
    with pytest.raises(UsageError, match=r"is given twice; pass each shard's results file once"):
        merge_results([good, good], manifest)
    with pytest.raises(ResultsError, match=r"nope.json: no such results file"):
        merge_results([good, suite / "nope.json"], manifest)
    with pytest.raises(UsageError, match=r"^merge: no results files given"):
        merge_results([], manifest)
    merged = finish_merged(merge_results([good], manifest), manifest)
    write_results(merged, suite / "merged.json")
    assert load_results(suite / "merged.json").exit_code == 3  # gamma's count dropped: judged, written, read back


def finish_merged(merged, manifest):
    """Judge merged results as ``evalrun merge`` does."""
    context = RunContext.build(make_session(manifest.path), merged.tier, manifest)
    return judge(merged, context, load_baseline(baseline_path(manifest, merged.tier)), strict=False)
