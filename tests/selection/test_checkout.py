"""Clean-checkout runs: real git repositories, git archive, and a real evalrun run in the export."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.selection.checkout import clean_checkout
from evalrun.errors import UsageError
from harness import an_eval, manifest, warm_evalrun
from harness.git import git, write

# Passes only when data.csv sits beside it: the untracked file of the author's machine.
SCORER = """
import json, os
rows = open("data.csv").read().split()
json.dump({"checks": [{"name": "data has rows", "assertions": 1, "passed": len(rows) > 0}]},
          open(os.environ["EVALRUN_REPORT"], "w"))
"""
MANIFEST = manifest(an_eval("reads-data")).text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    write(root, {
        "manifest.toml": MANIFEST,
        "evals/reads-data/score.py": SCORER,
        "tracked.txt": "committed\n",
        "gone.txt": "committed, then deleted\n",
        ".gitignore": "build/\n.evalrun/\n",
    })
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def run_evalrun(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_"))}
    env.pop("CI", None)
    return warm_evalrun(cwd, *args, env=env, timeout=120)


def test_an_eval_reading_an_untracked_file_passes_here_and_fails_in_the_clean_checkout(repo: Path) -> None:
    write(repo, {"evals/reads-data/data.csv": "1\n2\n"})  # never committed
    here = run_evalrun(repo, "t1")
    assert here.returncode == 0, here.stdout + here.stderr
    with clean_checkout(repo / "manifest.toml", worktree=False) as manifest:
        export = manifest.parent
        assert manifest.name == "manifest.toml" and export != repo
        assert not (export / "evals/reads-data/data.csv").exists()
        there = run_evalrun(export, "t1", "--manifest", str(manifest))
        assert there.returncode == 1, there.stdout + there.stderr
        assert "data.csv" in there.stdout  # the crash names the missing file
    assert not export.exists()  # the export is removed afterwards


def test_clean_checkout_has_only_committed_files(repo: Path) -> None:
    (repo / "tracked.txt").write_text("changed, not committed\n")
    write(repo, {"build/out.bin": "local build output\n", "untracked.txt": "x\n"})
    with clean_checkout(repo / "manifest.toml", worktree=False) as manifest:
        export = manifest.parent
        assert (export / "tracked.txt").read_text() == "committed\n"
        assert not (export / "build").exists() and not (export / "untracked.txt").exists()
        assert not (export / ".git").exists()


def test_worktree_lays_tracked_changes_on_top_but_not_untracked_files(repo: Path) -> None:
    (repo / "tracked.txt").write_text("modified\n")
    (repo / "gone.txt").unlink()
    write(repo, {"staged.txt": "added to the index\n", "untracked.txt": "never added\n"})
    git(repo, "add", "staged.txt")
    (repo / "evals/reads-data/run.sh").write_text("#!/bin/sh\n")
    (repo / "evals/reads-data/run.sh").chmod(0o755)
    git(repo, "add", "evals/reads-data/run.sh")
    with clean_checkout(repo / "manifest.toml", worktree=True) as manifest:
        export = manifest.parent
        assert (export / "tracked.txt").read_text() == "modified\n"
        assert (export / "staged.txt").read_text() == "added to the index\n"
        assert os.access(export / "evals/reads-data/run.sh", os.X_OK)  # the mode travels with the file
        assert not (export / "gone.txt").exists()
        assert not (export / "untracked.txt").exists()
    assert (repo / "untracked.txt").exists() and (repo / "tracked.txt").read_text() == "modified\n"  # untouched


def test_the_yielded_path_is_the_twin_of_a_manifest_in_a_subfolder(tmp_path: Path) -> None:
    write(tmp_path, {"suite/manifest.toml": MANIFEST, "suite/evals/reads-data/score.py": SCORER})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    with clean_checkout(tmp_path / "suite" / "manifest.toml", worktree=False) as manifest:
        assert manifest.parent.name == "suite" and manifest.read_text() == MANIFEST


def test_the_export_is_removed_when_the_run_raises(repo: Path) -> None:
    with pytest.raises(RuntimeError):
        with clean_checkout(repo, worktree=False) as root:
            assert (root / "manifest.toml").exists()
            raise RuntimeError("the run blew up")
    assert not root.exists()


def test_an_uncommitted_manifest_is_a_usage_error(repo: Path) -> None:
    write(repo, {"other/manifest.toml": MANIFEST})
    with pytest.raises(UsageError, match=r"--clean-checkout: other/manifest.toml is not committed, .*; commit it"):
        with clean_checkout(repo / "other/manifest.toml", worktree=False):
            pass
    git(repo, "add", "other/manifest.toml")
    with clean_checkout(repo / "other/manifest.toml", worktree=True) as manifest:  # staged: --worktree has it
        assert manifest.read_text() == MANIFEST


def test_a_repository_without_a_commit_is_a_usage_error(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    with pytest.raises(UsageError, match=r"--clean-checkout: .* has no commit yet; commit your files first"):
        with clean_checkout(tmp_path, worktree=False):
            pass


def test_outside_a_repository_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # tmp_path may sit inside another repo
    with pytest.raises(UsageError, match=r"--worktree: .* is not inside a git repository .*; run without --worktree"):
        with clean_checkout(tmp_path, worktree=True):
            pass


def test_a_committed_link_to_an_absolute_path_fails_loudly(repo: Path) -> None:
    (repo / "evals/reads-data/data.csv").symlink_to("/etc/hostname")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "link to the author's disk")
    with pytest.raises(UsageError, match=r"--clean-checkout: evals/reads-data/data.csv: refused to unpack \(.*\); "):
        with clean_checkout(repo, worktree=False):
            pass


# Python 3.11.0-3.11.3 (Debian 12's 3.11.2) has no extraction filters: evalrun checks git archive's members itself.
UNPACKINGS = ["filter", "checked"]


@pytest.fixture(params=UNPACKINGS)
def unpacking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    import tarfile

    if request.param == "checked":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
        monkeypatch.delattr(tarfile, "FilterError", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no extraction filters (3.11.0-3.11.3): the checked unpacking is its own")
    return request.param


def test_the_export_keeps_links_inside_and_whether_a_file_is_executable_however_it_is_unpacked(repo: Path, unpacking: str) -> None:
    (repo / "evals/reads-data/data.csv").symlink_to("../../tracked.txt")
    (repo / "tool.sh").write_text("#!/bin/sh\necho ok\n")
    (repo / "tool.sh").chmod(0o775)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a link inside, an executable")
    with clean_checkout(repo, worktree=False) as root:
        assert (root / "evals/reads-data/data.csv").is_symlink()
        assert (root / "evals/reads-data/data.csv").read_text() == "committed\n"
        assert os.stat(root / "tool.sh").st_mode & 0o777 == 0o755 and os.stat(root / "tracked.txt").st_mode & 0o777 == 0o644
        assert subprocess.run([str(root / "tool.sh")], capture_output=True, text=True).stdout == "ok\n"


@pytest.mark.parametrize("target", ["/etc/hostname", "../../../outside.txt"])
def test_a_committed_link_leaving_the_repository_is_refused_however_it_is_unpacked(repo: Path, unpacking: str, target: str) -> None:
    (repo / "evals/reads-data/data.csv").symlink_to(target)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a link out")
    with pytest.raises(UsageError, match=r"^--clean-checkout: evals/reads-data/data.csv: refused to unpack \('evals/reads-data/data.csv' (is a link to an absolute path|would link to .*, which is outside the destination)\); commit a link inside"):
        with clean_checkout(repo, worktree=False):
            pass


_PART = st.sampled_from(["a", "b", "..", "."])


@pytest.mark.skipif(not hasattr(__import__("tarfile"), "data_filter"), reason="compared with the filter this Python lacks")
@given(name=st.lists(_PART, min_size=1, max_size=5).map("/".join),
       kind=st.sampled_from(["file", "dir", "symlink"]),
       link=st.tuples(st.booleans(), st.lists(_PART, min_size=1, max_size=5).map("/".join)))
def test_the_own_check_refuses_exactly_what_tarfiles_data_filter_refuses(name: str, kind: str, link: tuple[bool, str]) -> None:
    """git archive writes relative names, files, folders and links: for those, evalrun's own check (used where
    Python has no filters) and the data filter agree on every member."""
    import tarfile

    from evalrun.selection.checkout import _checked, _Refused

    member = tarfile.TarInfo(name)
    member.type = {"file": tarfile.REGTYPE, "dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE}[kind]
    member.mode = 0o775
    if kind == "symlink":
        member.linkname = ("/" if link[0] else "") + link[1]
    try:
        tarfile.data_filter(member, "/evalrun-export-that-is-not-there")
        filtered = True
    except tarfile.FilterError:
        filtered = False
    try:
        _checked([member])
        checked = True
    except _Refused:
        checked = False
    assert checked == filtered, (name, kind, member.linkname)
