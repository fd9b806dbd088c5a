"""The absolute-path scan of ``evalrun check``: real files under tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

from harness import an_eval, as_a_user_with_no_home, finishes, manifest, needs_root
from harness.git import write

from evalrun.manifest import load_manifest
from evalrun.absolute_paths import MAX_BYTES, find_absolute_paths, scan_absolute_paths

FIX = "use a path relative to the eval's folder or $EVALRUN_WORKDIR"


def _suite(root: Path, files: dict[str, str], run: tuple[str, ...] = ("python", "score.py")) -> Path:
    write(root, manifest(an_eval("x", run)).project({"evals/x/score.py": "print('hello')\n", **files}))
    return root / "manifest.toml"


def test_a_home_path_and_the_repository_path_are_found_with_file_and_line(tmp_path: Path) -> None:
    repo_file = f"{tmp_path}/evals/x/fixture.json"
    path = _suite(tmp_path, {
        "evals/x/score.py": f'import json\nrows = open("/root/data.csv")\nfixture = json.load(open("{repo_file}"))\n',
    })
    warnings = find_absolute_paths(load_manifest(path), home=Path("/root"))
    assert warnings == [
        f"evals/x/score.py:2: absolute path /root/data.csv; {FIX}",
        f"evals/x/score.py:3: absolute path {repo_file}; {FIX}",
    ]


def test_the_default_home_is_this_users(tmp_path: Path) -> None:
    planted = f"{Path.home()}/datasets/golden.csv"
    path = _suite(tmp_path, {"evals/x/score.py": f"DATA = '{planted}'\n"})
    assert [h.path for h in scan_absolute_paths(load_manifest(path))] == [planted]


def test_other_users_home_folders_are_found(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"evals/x/run.sh": (
        "cat /home/alice/eval/in.txt\n"
        "open /Users/bob/Desktop/x.png\n"
        'type "C:\\Users\\carol\\data.csv"\n'
    )})
    hits = scan_absolute_paths(load_manifest(path), home=Path("/nonexistent-home"))
    assert [(h.line, h.path) for h in hits] == [
        (1, "/home/alice/eval/in.txt"), (2, "/Users/bob/Desktop/x.png"), (3, "C:\\Users\\carol\\data.csv"),
    ]


def test_relative_and_system_paths_are_ignored(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"evals/x/score.py": (
        'open("data/in.csv")\n'
        'open("./fixtures/a.json")\n'
        'subprocess.run(["/usr/bin/env", "python"])\n'
        'p = "/srv/root/data"  # the home only as a whole path, not inside another\n'
        'q = "/rootfs/x"\n'
        'r = "~/root/x"\n'
        f's = "{tmp_path}-other/x"  # a sibling of the repository, not the repository\n'
    )})
    assert find_absolute_paths(load_manifest(path), home=Path("/root")) == []


def test_the_manifest_itself_is_scanned(tmp_path: Path) -> None:
    path = _suite(tmp_path, {}, run=("/root/venv/bin/python", "score.py"))
    assert find_absolute_paths(load_manifest(path), home=Path("/root")) == [
        f"manifest.toml:5: absolute path /root/venv/bin/python; {FIX}"
    ]


def test_binaries_big_files_and_tool_folders_are_skipped(tmp_path: Path) -> None:
    path = _suite(tmp_path, {
        "evals/x/__pycache__/score.cpython-311.pyc": "/root/compiled/path\n",
        "evals/x/.git/config": "/root/x\n",
        "evals/x/node_modules/dep/index.js": "/root/x\n",
    })
    (tmp_path / "evals/x/blob.bin").write_bytes(b"\0\1/root/secret/path\n")
    (tmp_path / "evals/x/latin1.txt").write_bytes("caf\xe9 /root/x\n".encode("latin-1"))
    (tmp_path / "evals/x/big.csv").write_text("/root/big.csv\n" + "x" * MAX_BYTES)
    (tmp_path / "evals/x/small.csv").write_text("/root/small.csv\n")
    hits = scan_absolute_paths(load_manifest(path), home=Path("/root"))
    assert [(h.file, h.path) for h in hits] == [("evals/x/small.csv", "/root/small.csv")]


def test_a_fifo_or_a_link_to_dev_zero_among_the_sources_is_passed_over(tmp_path: Path) -> None:
    # A plain read would block on the FIFO forever and read /dev/zero without end.
    path = _suite(tmp_path, {"evals/x/small.csv": "/root/small.csv\n"})
    os.mkfifo(tmp_path / "evals/x/pipe")
    (tmp_path / "evals/x/zeros").symlink_to("/dev/zero")
    hits = finishes(lambda: scan_absolute_paths(load_manifest(path), home=Path("/root")))
    assert [(h.file, h.path) for h in hits] == [("evals/x/small.csv", "/root/small.csv")]


def test_a_home_of_slash_does_not_flag_every_absolute_path(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"evals/x/score.py": 'open("/etc/hosts")\nopen("/root/x")\n'})
    assert find_absolute_paths(load_manifest(path), home=Path("/")) == []


def test_an_eval_folder_shared_by_two_evals_is_scanned_once(tmp_path: Path) -> None:
    write(tmp_path, manifest(an_eval("a", dir="evals/x"), an_eval("b", dir="evals/x")).project(
        {"evals/x/score.py": 'open("/root/one")\n'}))
    assert len(find_absolute_paths(load_manifest(tmp_path / "manifest.toml"), home=Path("/root"))) == 1


def _git(root: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def _repo_with_ignored_caches(root: Path) -> Path:
    path = _suite(root, {
        ".gitignore": ".hypothesis/\nbuild/\n",
        "evals/x/tracked.py": "A = '/home/alice/tracked.csv'\n",
        "evals/x/new_untracked.py": "B = '/home/alice/new.csv'\n",
        "evals/x/.hypothesis/examples/0a1b": "/home/alice/cache-entry\n",
        "evals/x/build/out.txt": "/home/alice/build-output\n",
        "evals/x/with space/ok.py": "C = '/home/alice/spaced.csv'\n",
    })
    return path


def test_in_a_git_work_tree_only_tracked_and_unignored_files_are_scanned(tmp_path: Path) -> None:
    path = _repo_with_ignored_caches(tmp_path)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "manifest.toml", ".gitignore", "evals/x/score.py", "evals/x/tracked.py", "evals/x/with space")
    (tmp_path / "evals/x/score.py").unlink()  # tracked but deleted: nothing to read, no error
    hits = scan_absolute_paths(load_manifest(path), home=Path("/nonexistent-home"))
    assert [(h.file, h.path) for h in hits] == [
        ("evals/x/new_untracked.py", "/home/alice/new.csv"),  # not added yet, not ignored: part of the project
        ("evals/x/tracked.py", "/home/alice/tracked.csv"),
        ("evals/x/with space/ok.py", "/home/alice/spaced.csv"),
    ]


def test_outside_a_git_work_tree_every_file_is_walked(tmp_path: Path) -> None:
    path = _repo_with_ignored_caches(tmp_path)  # no git init: .gitignore means nothing
    hits = scan_absolute_paths(load_manifest(path), home=Path("/nonexistent-home"))
    assert sorted(h.file for h in hits) == [
        "evals/x/.hypothesis/examples/0a1b", "evals/x/build/out.txt", "evals/x/new_untracked.py",
        "evals/x/tracked.py", "evals/x/with space/ok.py",
    ]


@needs_root
def test_check_works_for_a_user_with_no_home_at_all() -> None:
    # A container's arbitrary uid: no $HOME and no passwd entry, so Path.home() raises.
    import shutil
    import tempfile

    from evalrun.cli import main

    folder = Path(tempfile.mkdtemp(prefix="evalrun-nohome-"))
    try:
        path = _suite(folder, {"evals/x/score.py": f"DATA = '{folder}/evals/x/data.csv'\n"})
        for p in (folder, *folder.rglob("*")):
            p.chmod(0o755)
        assert main(["check", "--manifest", str(path)]) == 0  # as root: and every module the child needs is imported
        code, said = as_a_user_with_no_home(lambda: main(["check", "--manifest", str(path)]))
        assert code == 0, said
        assert f"evals/x/score.py:1: absolute path {folder}/evals/x/data.csv" in said
    finally:
        shutil.rmtree(folder)
