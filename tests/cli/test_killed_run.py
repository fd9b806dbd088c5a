"""A SIGKILLed evalrun leaves nothing the next run does not sweep: scorer groups and scratch folders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from harness import an_eval, manifest, wait_until
from harness.simulation import simulated_env, simulated_evalrun

from evalrun.scratch import make_scratch, sweep_scratch

# First run: spawn a long sleeper in the scorer's own group, say so, then hang.
# Second run (the flag file exists): pass at once.
SCORER = """
import os, pathlib, subprocess, sys, time
here = pathlib.Path(__file__).parent
if (here / "second-run").exists():
    from evalrun import scorer
    with scorer.check("quick") as c:
        c.true(True)
    raise SystemExit(0)
sleeper = subprocess.Popen(["sleep", "3600"])
(here / "sleeper.tmp").write_text(f"{sleeper.pid} {os.getpgid(sleeper.pid)}")
os.replace(here / "sleeper.tmp", here / "sleeper.pid")
time.sleep(3600)
"""

QUICK = """
from evalrun import scorer
with scorer.check("quick") as c:
    c.true(True)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def group_alive(pgid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
    return False


@pytest.mark.parametrize("platform", ["linux", "macos"])
def test_a_sigkilled_run_leaves_no_scorer_group_and_no_scratch_after_the_next_run(
    project, tmp_path: Path, platform: str
) -> None:
    # macOS (simulated: no /proc, both runs): the killed run's locks tell it is dead, ps that its scorer runs on.
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # One worker (-j 1), a quick eval first: the hanging scorer's record is the second its worker's pidfile
    # slot holds, written over the first one's blanked record (evalrun.leftovers.PidfileSlot).
    proj = project(manifest(an_eval("quick", dir="q", files={"score.py": QUICK}),
                            an_eval("hangs", dir="e", files={"score.py": SCORER})).project())
    env = proj.env({"TMPDIR": str(tmp)})
    if platform != "linux":
        env = simulated_env(platform, env)
    # fresh, not forked: SIGKILLed mid-run
    first = subprocess.Popen([sys.executable, "-m", "evalrun", "t1", "-j", "1"], cwd=proj.root, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pid_file = proj.root / "e" / "sleeper.pid"
    try:
        wait_until(pid_file.exists, within=60, what="the scorer starting its sleeper")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    sleeper, pgid = map(int, pid_file.read_text().split())
    try:
        assert alive(sleeper) and group_alive(pgid)  # what a SIGKILL leaves: the scorer's group runs on
        assert [p.name for p in tmp.iterdir() if p.name.startswith("evalrun-")]  # and its scratch

        (proj.root / "e" / "second-run").write_text("")
        if platform == "linux":
            second = proj.run("t1", env={"TMPDIR": str(tmp)})
        else:
            second = simulated_evalrun(platform, proj.root, "t1", env=env)
        assert second.code in (0, 3), second.output
        assert f"stopped leftover scorer of eval hangs (pgid {pgid}) from an earlier run" in second.output
        wait_until(lambda: not group_alive(pgid), within=60, what="the killed run's scorer group ending")
        assert not alive(sleeper)
        wait_until(lambda: not [p for p in tmp.iterdir() if p.name.startswith("evalrun-")], within=60,
                   what="the killed run's scratch folders being swept")
    finally:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_sweep_spares_a_live_owner_and_foreign_folders(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = make_scratch()  # this process is alive: never swept
    unmarked = tmp_path / "evalrun-1-1-abc"  # looks stale, but carries no marker
    unmarked.mkdir()
    dead = tmp_path / "evalrun-999999999-1-xyz"  # no such pid: stale, and marked
    dead.mkdir()
    (dead / ".evalrun-scratch").write_text("999999999\n")
    (dead / "work").mkdir()
    removed = sweep_scratch()
    assert removed == [dead]
    assert mine.is_dir() and unmarked.is_dir() and not dead.exists()
