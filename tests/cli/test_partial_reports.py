"""A scorer stopped by its timeout or by Ctrl-C keeps the checks its SDK already wrote, marked partial."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import an_eval, default_sigint, manifest

from evalrun.scorer import Scorer

# Two checks finish, the third hangs: the SDK has written both, and names the third as running.
SCORER = """
import pathlib, time
from evalrun import scorer
with scorer.check("first") as c:
    c.true(True)
with scorer.check("second") as c:
    c.equal(1, 1)
    c.equal(2, 2)
scorer.metric("rows", 3)
with scorer.check("hangs forever") as c:
    (pathlib.Path(__file__).parent / "inside").write_text("")
    time.sleep(3600)
"""

def slow_manifest(timeout: int) -> str:
    return manifest(an_eval("slow", dir="e", timeout=timeout)).text


def test_a_timed_out_scorer_keeps_its_finished_checks_marked_partial(project) -> None:
    # 2 s: the scorer reaches its third check in ~0.1 s (0.03 s of CPU), ten times over even on a loaded machine.
    proj = project({"manifest.toml": slow_manifest(2), "e/score.py": SCORER})
    r = proj.run("t1")
    assert r.code == 1, r.output
    result = proj.eval_result("slow")
    assert result["status"] == "timeout"
    assert result["partial"] is True
    assert result["message"].startswith('timed out after 2 s during check "hangs forever"; ')
    assert "kept the 2 checks it finished (partial)" in result["message"]
    assert [(c["name"], c["assertions"], c["passed"]) for c in result["checks"]] == [
        ("first", 1, True), ("second", 2, True), ("hangs forever", 0, False),
    ]
    assert result["checks"][2]["message"] == "did not finish: timed out after 2 s"
    assert result["metrics"] == {"rows": 3}


def test_an_interrupted_scorer_keeps_its_finished_checks_marked_partial(project) -> None:
    proj = project({"manifest.toml": slow_manifest(600), "e/score.py": SCORER})
    # fresh, not forked: Ctrl-C sent mid-run
    run = subprocess.Popen([sys.executable, "-m", "evalrun", "t1"], cwd=proj.root, env=proj.env(),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           preexec_fn=default_sigint)  # Ctrl-C must work even when the suite runs in the background
    inside = proj.root / "e" / "inside"
    end = time.monotonic() + 120
    while not inside.exists() and time.monotonic() < end and run.poll() is None:
        time.sleep(0.05)
    assert inside.exists(), "the scorer never reached its third check"
    run.send_signal(signal.SIGINT)
    out, _ = run.communicate(timeout=120)
    assert run.returncode == 130, out
    result = proj.eval_result("slow")
    assert result["status"] == "interrupted" and result["partial"] is True
    assert result["message"].startswith('interrupted during check "hangs forever"; its process group was stopped; kept the 2 checks')
    assert [c["name"] for c in result["checks"]] == ["first", "second", "hangs forever"]


def test_a_timed_out_scorer_without_a_report_is_not_partial(project) -> None:
    proj = project({"manifest.toml": slow_manifest(1), "e/score.py": "import time\ntime.sleep(3600)\n"})
    r = proj.run("t1")
    assert r.code == 1, r.output
    result = proj.eval_result("slow")
    assert result["status"] == "timeout" and result["partial"] is False and result["checks"] == []
    assert result["message"] == "timed out after 1 s; its process group was killed"


def test_the_sdk_names_the_running_check_and_drops_it_when_done(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    s = Scorer(path)
    with s.check("one") as c:
        c.true(True)
        during = path.read_text() if path.exists() else None  # asserted outside: the check swallows exceptions
    assert during is not None and json.loads(during)["running"] == "one"
    done = json.loads(path.read_text())
    assert "running" not in done and [c["name"] for c in done["checks"]] == ["one"]
