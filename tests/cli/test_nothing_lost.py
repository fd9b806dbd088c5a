"""Nothing lost: paths a scorer names stay in its folder, concurrent updates both land, files honour umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evalrun.atomic import write_atomic, writes_in_place
from evalrun.errors import ManifestError
from evalrun.manifest import load_manifest
from harness import an_eval, manifest


def _junit_manifest(tmp_path: Path, junit: str) -> Path:
    (tmp_path / "e").mkdir(exist_ok=True)
    path = tmp_path / "manifest.toml"
    path.write_text(manifest(an_eval("x", ["true"], dir="e", format="junit", junit=junit)).text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("junit", "problem"),
    [
        ("/tmp/victim", "is absolute"),
        ("../../x", "lies outside the eval's folder"),
        ("reports/../../x", "lies outside the eval's folder"),
        (".", "lies outside the eval's folder"),
    ],
)
def test_a_junit_path_outside_the_eval_folder_is_refused_at_load(tmp_path: Path, junit: str, problem: str) -> None:
    victim = tmp_path / "x"
    victim.write_text("precious")
    with pytest.raises(ManifestError) as caught:
        load_manifest(_junit_manifest(tmp_path, junit))
    text = str(caught.value)
    assert 'evals[0] ("x").junit' in text and problem in text and "\n" not in text
    assert victim.read_text() == "precious"


def test_a_junit_path_inside_the_eval_folder_is_accepted(tmp_path: Path) -> None:
    assert load_manifest(_junit_manifest(tmp_path, "reports/junit.xml")).evals[0].junit == "reports/junit.xml"


def test_a_junit_path_outside_the_folder_is_never_deleted_by_a_run(project) -> None:
    proj = project(manifest(an_eval("x", ["true"], dir="e", format="junit", junit="../victim", files={".keep": ""})).project(
        {"victim": "precious"}))
    r = proj.run("t1")
    assert r.code == 2, r.output
    assert "junit: '../victim' lies outside the eval's folder" in r.err
    assert (proj.root / "victim").read_text() == "precious"


# A scorer that waits until both concurrent updates have started their scorers,
# so both read (on BASE) the same old baseline before either writes.
BARRIER_SCORER = """
import os, pathlib, sys, time
from evalrun import scorer
me = os.environ["EVALRUN_EVAL"]
meet = pathlib.Path(sys.argv[1])
(meet / me).write_text("here")
deadline = time.monotonic() + 120
while len(list(meet.iterdir())) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
with scorer.check("met the other update") as c:
    c.equal(len(list(meet.iterdir())), 2)
"""


def test_two_concurrent_filtered_updates_both_land(project, tmp_path: Path) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    proj = project(manifest(*(an_eval(n, ["python", "score.py", str(meet)], dir="e") for n in "ab")).project(
        {"e/score.py": BARRIER_SCORER}))
    with ThreadPoolExecutor(2) as pool:  # both at once: each scorer waits for the other's
        runs = list(pool.map(lambda name: proj.run("baseline", "--update", "t1", "--eval", name, timeout=300), "ab"))
    outputs = [r.output for r in runs]
    assert [r.code for r in runs] == [0, 0], outputs
    assert all("wrote " in out for out in outputs), outputs
    baseline = tomllib.loads((proj.root / "baselines" / "t1.toml").read_text())
    settings = baseline.pop("/settings")  # each eval's gate settings (docs/gate-settings.md) land too
    assert baseline == {"a": {"met the other update": 1}, "b": {"met the other update": 1}}
    assert set(settings) == {"a", "b"}


def test_what_is_not_a_file_is_written_into_never_replaced(tmp_path: Path) -> None:
    # Only the rule is asked about /dev: a write there from a broken rule would, as root, replace it.
    for name in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1"):
        assert writes_in_place(name), name
    plain, link, missing = tmp_path / "plain.json", tmp_path / "link.json", tmp_path / "missing.json"
    plain.write_text("{}")
    link.symlink_to(plain)
    assert not any(writes_in_place(p) for p in (plain, link, missing, tmp_path / "sub" / "x.json"))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert writes_in_place(fifo)
    write_atomic(link, "new")  # through the link: the file is replaced, the link stays
    assert link.is_symlink() and plain.read_text() == "new"


def test_write_atomic_honours_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "out.json", "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.json").stat().st_mode) == 0o640


def test_results_and_baseline_files_are_readable_by_others_under_umask_022(project) -> None:
    proj = project(manifest(an_eval("a", dir="e", files={
        "score.py": "from evalrun import scorer\nwith scorer.check('ok') as c:\n    c.true(True)\n"})).project())
    code = (
        "import os, runpy, sys; os.umask(0o022); sys.argv = ['evalrun', 'baseline', '--update', 't1'];"
        "runpy.run_module('evalrun', run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=proj.root, env=proj.env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for path in (proj.root / ".evalrun" / "results" / "t1.json", proj.root / "baselines" / "t1.toml"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o644, path
