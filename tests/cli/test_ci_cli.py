"""Changed-only runs, shards and merge, clean-checkout runs and check, through the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from harness import an_eval, manifest
from harness.stub_projects import git_repo, stub_project

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def test_changed_since_runs_only_changed_evals_and_dry_says_why(project) -> None:
    proj = git_repo(project, {"a": "marker.py", "b": "marker.py"})
    (proj.root / "evals" / "b" / "note.txt").write_text("changed\n")
    marker = proj.root / "ran.txt"
    r = proj.run("t1", "--changed-since", "HEAD", env={"MARKER": str(marker)})
    assert r.code == 0, r.output
    assert marker.read_text().split() == ["b"]
    assert proj.results()["selection"]["filtered_out"] == ["a"]
    d = proj.run("dry", "t1", "--changed-since", "HEAD", "--no-probe")
    assert "b: selected: evals/b/note.txt changed" in d.out
    assert "a: left out: not changed since HEAD" in d.out
    (proj.root / "manifest.toml").write_text((proj.root / "manifest.toml").read_text() + "\n# touched\n")
    marker.unlink()
    assert proj.run("t1", "--changed-since", "HEAD", env={"MARKER": str(marker)}).code == 0
    assert sorted(marker.read_text().split()) == ["a", "b"]
    bad = proj.run("t1", "--changed-since", "no-such-ref")
    assert bad.code == 2 and "git does not know that ref" in bad.err


def test_shards_cover_everything_and_merge_decides_as_one_run(project) -> None:
    proj = stub_project(project, {n: "pass.py" for n in ("a", "b", "c", "d", "e")})
    assert proj.run("baseline", "--update", "t1").code == 0
    names = []
    for i in (1, 2):
        r = proj.run("t1", "--shard", f"{i}/2", "--json", f"shard{i}.json")
        assert r.code == 0, r.output
        names += [e["name"] for e in json.loads((proj.root / f"shard{i}.json").read_text())["evals"]]
    assert sorted(names) == ["a", "b", "c", "d", "e"]
    r = proj.run("merge", "shard1.json", "shard2.json")
    assert r.code == 0, r.output
    assert len(proj.results()["evals"]) == 5
    missing = proj.run("merge", "shard1.json")
    assert missing.code == 2
    assert "shard 2/2 is missing" in missing.err


def test_clean_checkout_catches_a_dependency_on_an_untracked_file(project) -> None:
    reader = (
        "import json, os\nok = os.path.exists('data.csv')\n"
        "json.dump({'checks': [{'name': 'reads its data', 'assertions': 1, 'passed': ok}]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
    )
    proj = project(manifest(an_eval("r", dir="e", files={"score.py": reader})).project({".gitignore": ".evalrun/\n"}))
    _git(proj.root, "init", "-q", "-b", "main")
    _git(proj.root, "add", "-A")
    _git(proj.root, "commit", "-qm", "first")
    (proj.root / "e" / "data.csv").write_text("1,2\n")  # untracked: only the author has it
    assert proj.run("t1").code == 0
    r = proj.run("t1", "--clean-checkout")
    assert r.code == 1, r.output
    assert "running from a clean checkout of HEAD" in r.out
    assert "--manifest" not in r.out  # hints name the real manifest, not the temporary export
    assert proj.results()["evals"][0]["status"] == "failed"  # results land in the real repository
    r = proj.run("t1", "--clean-checkout", "--worktree")
    assert r.code == 1  # --worktree lays tracked changes on top, never untracked files


def test_check_warns_about_absolute_paths_of_this_machine(project) -> None:
    home = str(Path.home())
    proj = project(manifest(an_eval("x", dir="e", files={"score.py": f"DATA = '{home}/datasets/golden.csv'\n"})).project())
    r = proj.run("check")
    assert r.code == 0
    assert f"e/score.py:1: absolute path {home}/datasets/golden.csv" in r.out


def test_check_skips_what_git_ignores(project) -> None:
    proj = project(manifest(an_eval("x", dir="e", files={
        "score.py": "DATA = '/home/alice/golden.csv'\n", ".hypothesis/examples/ab12": "/home/alice/cached\n",
    })).project({".gitignore": ".hypothesis/\n"}))
    subprocess.run(["git", "init", "-q"], cwd=proj.root, check=True)
    r = proj.run("check")
    assert r.code == 0, r.output
    assert "e/score.py:1: absolute path /home/alice/golden.csv" in r.out
    assert ".hypothesis" not in r.output and "1 absolute path warning" in r.out
