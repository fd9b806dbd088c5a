"""The absolute-path scan of ``evalrun check``: real files under tmp_path."""

from __future__ import annotations

from pathlib import Path

from evalrun.manifest import load_manifest
from evalrun.absolute_paths import MAX_BYTES, find_absolute_paths, scan_absolute_paths
from test_selection import write

FIX = "use a path relative to the eval's folder or $EVALRUN_WORKDIR"


def _suite(root: Path, files: dict[str, str], run: str = '["python", "score.py"]') -> Path:
    manifest = f'[[evals]]\nname = "x"\ntier = "t1"\ndir = "evals/x"\nrun = {run}\n'
    write(root, {"manifest.toml": manifest, "evals/x/score.py": "print('hello')\n", **files})
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
    path = _suite(tmp_path, {}, run='["/root/venv/bin/python", "score.py"]')
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


def test_a_home_of_slash_does_not_flag_every_absolute_path(tmp_path: Path) -> None:
    path = _suite(tmp_path, {"evals/x/score.py": 'open("/etc/hosts")\nopen("/root/x")\n'})
    assert find_absolute_paths(load_manifest(path), home=Path("/")) == []


def test_an_eval_folder_shared_by_two_evals_is_scanned_once(tmp_path: Path) -> None:
    manifest = ''.join(
        f'[[evals]]\nname = "{n}"\ntier = "t1"\ndir = "evals/x"\nrun = ["python", "score.py"]\n\n' for n in "ab"
    )
    write(tmp_path, {"manifest.toml": manifest, "evals/x/score.py": 'open("/root/one")\n'})
    assert len(find_absolute_paths(load_manifest(tmp_path / "manifest.toml"), home=Path("/root"))) == 1
