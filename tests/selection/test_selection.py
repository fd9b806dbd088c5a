"""--changed-since and --shard: real git repositories in temporary folders, real plans."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from evalrun.errors import ResultsError, UsageError
from evalrun.manifest import load_manifest
from evalrun.plan import make_plan
from evalrun.reports_out.dry import selection_reason
from evalrun.results import EvalResult, RunResults, Status, write_results
from evalrun.selection.changed import _glob_regex, _matches, changed_files, select_changed
from evalrun.selection.shards import Shard, assign_shards, durations_from, parse_shard, select_shard

from harness import REPO, an_eval, manifest
from harness.git import git, write

def reason_for(selection, name: str) -> str | None:
    return next((selection_reason(r) for r in selection.reasons if r.eval == name), None)


MANIFEST = manifest(an_eval("a"), an_eval("b"), an_eval("c", paths=["lib/**", "shared/data.csv"]), an_eval("d", tier="t2")).text


@pytest.fixture(params=["", "suite/"], ids=["manifest-at-top", "manifest-in-subfolder"])
def repo(request, tmp_path: Path) -> Path:
    """A committed repository, tagged ``base``; returns the folder of its manifest."""
    sub = request.param
    write(tmp_path, {
        f"{sub}manifest.toml": MANIFEST,
        **{f"{sub}evals/{n}/score.py": f"# {n}\n" for n in "abcd"},
        f"{sub}lib/sub/util.py": "x = 1\n",
        f"{sub}shared/data.csv": "1,2\n",
        f"{sub}shared/other.csv": "3,4\n",
        "pkg/evalrun_like.py": "# the tool's own code\n",
        "README": "hello\n",
        ".gitignore": "__pycache__/\n",
    })
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "tag", "base")
    return tmp_path / sub


def selected(root: Path, ref: str = "base", tier: str = "t1", package_dir: Path | None = None, evals=()):
    plan = make_plan(load_manifest(root / "manifest.toml"), tier, list(evals), [])
    return select_changed(plan, load_manifest(root / "manifest.toml"), ref, package_dir)


def names(selection) -> list[str]:
    return [p.name for p in selection.plan.evals]


# -- changed-only ---------------------------------------------------------------


def test_nothing_changed_selects_nothing_and_says_why(repo: Path) -> None:
    sel = selected(repo)
    assert names(sel) == []
    assert [(r.eval, r.selected, selection_reason(r)) for r in sel.reasons] == [
        ("a", False, "not changed since base"), ("b", False, "not changed since base"),
        ("c", False, "not changed since base"),
    ]
    assert sel.plan.filtered_out == ["a", "b", "c"]
    assert sel.plan.filters["changed_since"] == ["base"] and sel.plan.filters["unchanged"] == ["a", "b", "c"]


def test_modified_staged_untracked_and_deleted_files_select_their_evals(repo: Path) -> None:
    (repo / "evals/a/score.py").write_text("# changed, not staged\n")
    write(repo, {"evals/b/helper.py": "# new, staged\n"})
    git(repo, "add", "evals/b/helper.py")
    write(repo, {"evals/c/notes.txt": "untracked\n"})
    (repo / "evals/d/score.py").unlink()  # t2: not in this plan, must not leak into it
    sel = selected(repo)
    assert names(sel) == ["a", "b", "c"]
    assert reason_for(sel, "a") == "evals/a/score.py changed"
    assert reason_for(sel, "b") == "evals/b/helper.py changed"
    assert reason_for(sel, "c") == "evals/c/notes.txt changed"
    top = repo if (repo / ".git").exists() else repo.parent
    prefix = "" if repo == top else "suite/"
    assert f"{prefix}evals/d/score.py" in sel.changed  # a deletion is a change


def test_a_deleted_file_selects_its_eval(repo: Path) -> None:
    write(repo, {"evals/b/extra.txt": "x\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "extra")
    git(repo, "tag", "with-extra")
    (repo / "evals/b/extra.txt").unlink()
    sel = selected(repo, ref="with-extra")
    assert names(sel) == ["b"] and reason_for(sel, "b") == "evals/b/extra.txt changed"


def test_committed_changes_since_ref_count_and_several_files_are_summarised(repo: Path) -> None:
    write(repo, {"evals/a/one.py": "1\n", "evals/a/two.py": "2\n"})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "later")
    sel = selected(repo)
    assert names(sel) == ["a"]
    assert reason_for(sel, "a") == "evals/a/one.py and 1 more changed"
    assert names(selected(repo, ref="HEAD")) == []  # against the new commit nothing differs


def test_untracked_pycache_does_not_select(repo: Path) -> None:
    top = repo if (repo / ".git").exists() else repo.parent
    (top / ".gitignore").unlink()  # so git itself would list the bytecode as untracked
    write(repo, {"evals/a/__pycache__/score.cpython-311.pyc": "bytes"})
    sel = selected(repo)
    assert "a" not in names(sel)


def test_paths_globs_select_with_the_pattern_named(repo: Path) -> None:
    (repo / "lib/sub/util.py").write_text("x = 2\n")
    sel = selected(repo)
    assert names(sel) == ["c"]
    assert reason_for(sel, "c") == "lib/sub/util.py changed (paths: lib/**)"


def test_a_file_outside_every_eval_and_glob_selects_nothing(repo: Path) -> None:
    (repo / "shared/other.csv").write_text("changed\n")
    write(repo, {"notes/todo.txt": "x\n"})
    assert names(selected(repo)) == []
    (repo / "shared/data.csv").write_text("changed\n")
    assert names(selected(repo)) == ["c"]


def test_manifest_change_selects_everything(repo: Path) -> None:
    (repo / "manifest.toml").write_text(MANIFEST + "\n# a comment\n")
    sel = selected(repo)
    assert names(sel) == ["a", "b", "c"]
    assert {selection_reason(r) for r in sel.reasons} == {"manifest.toml changed: everything is selected"}
    assert sel.plan.filtered_out == [] and sel.plan.filters["unchanged"] == []


def test_a_change_to_evalruns_own_package_selects_everything(repo: Path) -> None:
    top = repo if (repo / ".git").exists() else repo.parent
    (top / "pkg/evalrun_like.py").write_text("# changed\n")
    sel = selected(repo, package_dir=top / "pkg")
    assert names(sel) == ["a", "b", "c"]
    assert reason_for(sel, "a").endswith("evalrun_like.py changed (evalrun's own code): everything is selected")
    # An installed evalrun, outside the repository, is not the repository's business.
    assert names(selected(repo, package_dir=REPO / "evalrun")) == []


def test_a_baseline_entry_change_selects_only_that_eval(repo: Path) -> None:
    write(repo, {"baselines/t1.toml": '[a]\n"x" = 1\n\n[b]\n"y" = 2\n'})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "baseline")
    (repo / "baselines/t1.toml").write_text('[a]\n"x" = 1\n\n[b]\n"y" = 3\n')
    sel = selected(repo, ref="HEAD")
    assert names(sel) == ["b"]
    assert reason_for(sel, "b") == "baselines/t1.toml changed: its entry for this eval differs from HEAD"


def test_existing_filters_are_kept(repo: Path) -> None:
    (repo / "evals/a/score.py").write_text("changed\n")
    (repo / "evals/b/score.py").write_text("changed\n")
    sel = selected(repo, evals=["a", "c"])
    assert names(sel) == ["a"]
    assert sel.plan.filtered_out == ["b", "c"]
    assert sel.plan.filters["evals"] == ["a", "c"]


def test_changed_files_lists_absolute_paths_of_tracked_and_untracked_changes(repo: Path) -> None:
    (repo / "evals/a/score.py").write_text("changed\n")
    write(repo, {"new.txt": "x\n"})
    got = changed_files(repo / "manifest.toml", "base")
    assert got == sorted([(repo / "evals/a/score.py").resolve(), (repo / "new.txt").resolve()])


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ("nope", r"--changed-since nope: git does not know that ref in .*; fetch it .* or pass a commit"),
        ("--output=/tmp/x", r"--changed-since '--output=/tmp/x': not a git ref; pass a branch"),
        ("", r"--changed-since '': not a git ref"),
    ],
)
def test_bad_refs_are_one_line_usage_errors(repo: Path, ref: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        selected(repo, ref=ref)


def test_outside_a_git_repository_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"manifest.toml": MANIFEST, **{f"evals/{n}/score.py": "" for n in "abcd"}})
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # tmp_path may sit inside another repo
    with pytest.raises(UsageError, match=r"--changed-since: .* is not inside a git repository .*; run without"):
        selected(tmp_path)


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("lib/**", "lib/a/b.py", True),
        ("lib/**", "libx/a.py", False),
        ("lib/*.py", "lib/x.py", True),
        ("lib/*.py", "lib/a/b.py", False),
        ("**/*.csv", "data/x/y.csv", True),
        ("**/*.csv", "y.csv", True),
        ("lib", "lib/x.py", True),  # a folder covers what is below it
        ("data/[ab].txt", "data/a.txt", True),
        ("data/[!ab].txt", "data/a.txt", False),
        ("file?.txt", "file1.txt", True),
        ("../shared/**", "../shared/x.py", True),
        ("./lib/**", "lib/x.py", True),
    ],
)
def test_path_globs(pattern: str, path: str, hit: bool) -> None:
    assert _matches(_glob_regex(pattern), path) is hit


# -- shards ---------------------------------------------------------------------


@pytest.mark.parametrize(("text", "shard"), [("2/3", Shard(2, 3)), (" 1 / 1 ", Shard(1, 1)), ("5/5", Shard(5, 5))])
def test_parse_shard(text: str, shard: Shard) -> None:
    assert parse_shard(text) == shard and str(shard) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0/3", r"--shard 0/3: shards count from 1; use 1/3 to 3/3"),
        ("4/3", r"--shard 4/3: shards count from 1; use 1/3 to 3/3"),
        ("1/0", r"--shard 1/0: the number of shards must be at least 1"),
        ("x", r"--shard x: expected I/N, .* e.g. 2/3"),
        ("2", r"--shard 2: expected I/N"),
        ("-1/3", r"--shard -1/3: expected I/N"),
    ],
)
def test_parse_shard_refuses(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_shard(text)


NAMES = [f"e{i:02d}" for i in range(11)]


@pytest.mark.parametrize("total", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("durations", [None, {n: float(i % 4) + 0.5 for i, n in enumerate(NAMES[:7])}])
def test_every_eval_is_in_exactly_one_shard_and_the_split_is_stable(total: int, durations) -> None:
    split = assign_shards(NAMES, total, durations)
    assert len(split) == total
    flat = [n for shard in split for n in shard]
    assert sorted(flat) == NAMES and len(flat) == len(set(flat))
    shuffled = NAMES[:]
    random.Random(total).shuffle(shuffled)
    assert assign_shards(shuffled, total, dict(reversed(list((durations or {}).items())))) == split


def test_without_durations_shards_differ_by_at_most_one_eval() -> None:
    sizes = [len(s) for s in assign_shards(NAMES, 4, None)]
    assert max(sizes) - min(sizes) <= 1
    assert assign_shards(["c", "a", "b", "d"], 2, None) == [["a", "c"], ["b", "d"]]  # round-robin over sorted names


def test_with_durations_longest_first_balances_the_load() -> None:
    durations = {"a": 10.0, "b": 6.0, "c": 5.0, "d": 4.0, "e": 1.0}
    split = assign_shards(list(durations), 2, durations)
    assert split == [["a", "d"], ["b", "c", "e"]]
    loads = [sum(durations[n] for n in s) for s in split]
    naive = [sum(durations[n] for n in s) for s in assign_shards(list(durations), 2, None)]
    assert max(loads) == 14.0 < max(naive) == 16.0


def test_unknown_durations_count_as_the_median_and_zero_durations_still_spread() -> None:
    split = assign_shards(["big", "x", "y", "new"], 2, {"big": 9.0, "x": 1.0, "y": 2.0})
    assert split == [["big"], ["new", "x", "y"]]  # new counts 2.0: 9 vs 5
    assert [len(s) for s in assign_shards(NAMES[:6], 3, {n: 0.0 for n in NAMES[:6]})] == [2, 2, 2]


def test_select_shard_narrows_the_plan_and_records_the_shard(repo: Path) -> None:
    plan = make_plan(load_manifest(repo / "manifest.toml"), "t1", [], [])
    parts = [select_shard(plan, Shard(i, 2), None) for i in (1, 2)]
    assert [[p.name for p in part.evals] for part in parts] == [["a", "c"], ["b"]]
    assert parts[1].filtered_out == ["a", "c"] and parts[1].filters["shard"] == ["2/2"]
    assert parts[0].filters["shard_split"] == parts[1].filters["shard_split"]  # one split, seen from both shards
    other = select_shard(plan, Shard(1, 2), {"a": 1.0, "b": 1.0, "c": 5.0})
    assert [p.name for p in other.evals] == ["c"] and other.filters["shard_split"] != parts[0].filters["shard_split"]
    assert parts[0].is_filtered


def _results(evals: list[EvalResult]) -> RunResults:
    return RunResults(evalrun_version="0", tier="t1", manifest="manifest.toml", started_at="2026-01-01T00:00:00+00:00",
                      evals=evals)


def test_durations_from_a_results_file(tmp_path: Path) -> None:
    assert durations_from(tmp_path / "missing.json") is None
    path = tmp_path / "t1.json"
    write_results(_results([
        EvalResult(name="a", tier="t1", dir="evals/a", status=Status.PASSED, duration_s=3.5),
        EvalResult(name="b", tier="t1", dir="evals/b", status=Status.TIMEOUT, duration_s=60.0),
        EvalResult(name="c", tier="t1", dir="evals/c", status=Status.SKIPPED, duration_s=0.0),
    ]), path)
    assert durations_from(path) == {"a": 3.5, "b": 60.0}
    path.write_text(json.dumps({"version": 1})[:-1])
    with pytest.raises(ResultsError, match=r"t1.json: line 1: invalid JSON"):
        durations_from(path)
