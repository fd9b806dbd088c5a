"""What the history records of the working tree, read from a real git repository: HEAD's commit, its branch
(none when detached), whether tracked files changed; nothing outside a repository or before the first commit."""

from __future__ import annotations

from pathlib import Path

from evalrun.history.records import GitInfo, read_git
from harness.git import git


def _repo(root: Path, *extra: str) -> str:
    git(root, "init", "-q", "-b", "main", *extra)
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-qm", "first")
    return git(root, "rev-parse", "HEAD").strip()


def test_a_clean_checkout_on_a_branch(tmp_path: Path) -> None:
    commit = _repo(tmp_path)
    git(tmp_path, "checkout", "-q", "-b", "feature/x")
    assert read_git(tmp_path) == GitInfo(commit, "feature/x", False)


def test_a_changed_tracked_file_is_dirty_and_an_untracked_one_is_not(tmp_path: Path) -> None:
    commit = _repo(tmp_path)
    (tmp_path / "new.txt").write_text("untracked\n")
    assert read_git(tmp_path) == GitInfo(commit, "main", False)
    (tmp_path / "a.txt").write_text("two\n")
    assert read_git(tmp_path) == GitInfo(commit, "main", True)


def test_a_detached_head_has_a_commit_and_no_branch(tmp_path: Path) -> None:
    commit = _repo(tmp_path)
    git(tmp_path, "checkout", "-q", "--detach")
    assert read_git(tmp_path) == GitInfo(commit, None, False)


def test_a_file_named_head_does_not_confuse_it(tmp_path: Path) -> None:
    commit = _repo(tmp_path)
    (tmp_path / "HEAD").write_text("a file, not the ref\n")
    assert read_git(tmp_path) == GitInfo(commit, "main", False)


def test_a_sha256_repository(tmp_path: Path) -> None:
    commit = _repo(tmp_path, "--object-format=sha256")
    assert len(commit) == 64
    assert read_git(tmp_path) == GitInfo(commit, "main", False)


def test_before_the_first_commit_and_outside_a_repository_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    git(tmp_path / "empty", "init", "-q", "-b", "main")
    assert read_git(tmp_path / "empty") == GitInfo()
    (tmp_path / "plain").mkdir()
    assert read_git(tmp_path / "plain") == GitInfo()
