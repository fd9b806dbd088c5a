"""Hostile scorers through the real CLI: each fails its own eval, the run reaches a verdict.

One manifest, run with ``-j 1`` so that every eval after the one that deletes
its scratch folder runs on that same worker. Every hostile eval fails with a
one-line message; the good evals' results are intact; the results file is
written and small.
"""

from __future__ import annotations

import json

from harness import eval_entry

BIG = "9" * 5000  # more digits than Python's int() reads: ValueError if anything parses it naively

HOSTILE = {
    # name: (score.py, extra manifest lines, expected status, text the message must contain)
    "deep-json": (
        "import os\nopen(os.environ['EVALRUN_REPORT'], 'w').write('[' * 100_000)\n",
        "", "error", "invalid report: nested too deeply",
    ),
    "bigint-json": (
        "import os\nopen(os.environ['EVALRUN_REPORT'], 'w').write("
        f"'{{\"checks\": [{{\"name\": \"a\", \"assertions\": {BIG}, \"passed\": true}}]}}')\n",
        "", "error", "invalid report: not JSON (a number has more digits than Python reads",
    ),
    "report-is-dir": (
        "import os\nos.mkdir(os.environ['EVALRUN_REPORT'])\n",
        "", "error", "invalid report: $EVALRUN_REPORT is a directory, not a file",
    ),
    "report-is-fifo": (
        "import os\nos.mkfifo(os.environ['EVALRUN_REPORT'])\n",
        "", "error", "invalid report: $EVALRUN_REPORT is a FIFO (named pipe), not a regular file",
    ),
    "report-is-dev-zero": (
        "import os\nos.symlink('/dev/zero', os.environ['EVALRUN_REPORT'])\n",
        "", "error", "invalid report: $EVALRUN_REPORT is a character device, not a regular file",
    ),
    "huge-evidence": (
        "import json, os\n"
        "check = {'name': 'flood', 'assertions': 1, 'passed': False, 'message': 'm' * 5_000_000,"
        " 'evidence': 'e' * 20_000_000}\n"
        "json.dump({'checks': [check]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n",
        "", "failed", 'check "flood" failed: ',
    ),
    "deletes-scratch": (
        "import os, shutil\n"
        "worker = os.path.dirname(os.environ['EVALRUN_REPORT'])\n"
        "shutil.rmtree(os.path.dirname(worker))  # its worker's whole scratch folder\n",
        "", "error", "the eval's work folder was removed while it ran",
    ),
    "tap-bignum": (
        f"print('1..{BIG}')\nprint('ok {BIG} - huge number')\n",
        'format = "tap"', "failed", "the plan's count has more than 18 digits",
    ),
    "tap-stdout-fifo": (
        "import os, sys\nsys.stdout.flush()\nout = os.path.join(os.path.dirname(os.environ['EVALRUN_REPORT']), 'stdout')\n"
        "os.unlink(out)\nos.mkfifo(out)\n",
        'format = "tap"', "failed", "no TAP output to read: stdout is a FIFO (named pipe), not a regular file",
    ),
    "junit-bignum": (
        f"open('out.xml', 'w').write('<testsuite name=\"s\"><testcase name=\"x\" assertions=\"{BIG}\"/></testsuite>')\n",
        'format = "junit"\njunit = "out.xml"', "error", "is not a whole number from 0 to 1,000,000,000",
    ),
    "junit-fifo": (
        "import os\nos.mkfifo('fifo.xml')\n",
        'format = "junit"\njunit = "fifo.xml"', "error", "fifo.xml: is a FIFO (named pipe), not a regular file",
    ),
    "junit-is-dir": (
        "import os\nos.makedirs('out.xml', exist_ok=True)\n",  # and still there when the next run starts
        'format = "junit"\njunit = "out.xml"', "error", "out.xml: is a directory; junit = must name the XML file",
    ),
}

GOOD = (
    "import json, os\n"
    "json.dump({'checks': [{'name': 'adds up', 'assertions': 2, 'passed': True}], 'metrics': {'n': 3}},"
    " open(os.environ['EVALRUN_REPORT'], 'w'))\n"
)


def test_hostile_scorers_fail_alone_and_the_run_reaches_a_verdict(project) -> None:
    order = ["good-first", *HOSTILE, "good-last"]
    # the good eval right after the one that deleted the scratch folder runs on that same worker
    order.insert(order.index("deletes-scratch") + 1, "good-after-delete")
    files = {"manifest.toml": ""}
    manifest = []
    for name in order:
        source, extra, *_ = HOSTILE.get(name, (GOOD, ""))
        manifest.append(eval_entry(name, extra=extra))
        files[f"evals/{name}/score.py"] = source
    files["manifest.toml"] = "".join(manifest)
    proj = project(files)

    r = proj.run("t1", "-j", "1", timeout=600)

    assert r.code == 1, r.output
    assert "Traceback" not in r.output
    results_file = proj.root / ".evalrun" / "results" / "t1.json"
    assert results_file.stat().st_size < 200_000  # 25 MB of message and evidence did not reach it
    results = json.loads(results_file.read_text())
    by_name = {e["name"]: e for e in results["evals"]}
    assert list(by_name) == order
    for name in ("good-first", "good-after-delete", "good-last"):
        good = by_name[name]
        assert good["status"] == "passed", (name, good)
        assert [(c["name"], c["assertions"], c["passed"]) for c in good["checks"]] == [("adds up", 2, True)]
        assert good["metrics"] == {"n": 3}
    for name, (_, _, status, text) in HOSTILE.items():
        res = by_name[name]
        assert res["status"] == status, (name, res)
        assert text in res["message"], (name, res["message"])
        assert "\n" not in res["message"] and len(res["message"]) <= 600, name
    # a second run meets what the first left (a folder at a junit path) and still reaches a verdict
    again = proj.run("t1", "-j", "1", timeout=600)
    assert again.code == 1, again.output
    assert proj.eval_result("good-last")["status"] == "passed"
    assert "is a directory" in proj.eval_result("junit-is-dir")["message"]

    flood = by_name["huge-evidence"]["checks"][0]
    assert flood["message"].endswith("more characters cut)") and len(flood["message"]) < 600
    assert flood["evidence"].endswith("more bytes cut)") and len(flood["evidence"]) < 2200


# Two evals at once (-j 2): the hostile one waits until the good one has written its report, then removes
# the folder two levels above its own $EVALRUN_WORKDIR; the good one exits only after that removal.
WIPES_ABOVE = """
import os, shutil, time
from pathlib import Path
meet = Path(os.environ["MEET"])
deadline = time.monotonic() + 30
while not (meet / "good-wrote").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
shutil.rmtree(Path(os.environ["EVALRUN_WORKDIR"]).parent.parent, ignore_errors=True)
(meet / "wiped").write_text("")
"""

GOOD_BESIDE = """
import json, os, time
from pathlib import Path
meet = Path(os.environ["MEET"])
json.dump({"checks": [{"name": "adds up", "assertions": 2, "passed": True}]}, open(os.environ["EVALRUN_REPORT"], "w"))
(meet / "good-wrote").write_text("")
deadline = time.monotonic() + 30
while not (meet / "wiped").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
"""


def test_a_scorer_wiping_its_scratch_cannot_take_out_the_eval_beside_it(project, tmp_path) -> None:
    meet = tmp_path / "meet"
    meet.mkdir()
    env = f'env = {{ MEET = "{meet}" }}'
    proj = project({
        "manifest.toml": eval_entry("wipes", extra=env) + eval_entry("good", extra=env),
        "evals/wipes/score.py": WIPES_ABOVE,
        "evals/good/score.py": GOOD_BESIDE,
    })
    r = proj.run("t1", "-j", "2")
    assert (meet / "wiped").exists(), r.output  # the two ran at once, the removal happened
    assert proj.eval_result("good")["status"] == "passed", proj.eval_result("good")
    wiped = proj.eval_result("wipes")
    assert wiped["status"] == "error"
    assert "exited 0 but the eval's work folder was removed while it ran" in wiped["message"], wiped["message"]
    assert r.code == 1, r.output


DAEMONIZES = '''
import subprocess, sys
from evalrun import scorer
# A daemon of its own: a new session, out of the scorer's process group, still holding its output.
daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
open("daemon.pid", "w").write(str(daemon.pid))
with scorer.check("ok") as c:
    c.true(True)
scorer.finish()
'''


def test_a_daemon_left_holding_the_output_is_stopped_and_named_not_waited_on(project) -> None:
    # The per-test leak check fails this test if the daemon outlived the run.
    proj = project({"manifest.toml": eval_entry("daemon"), "evals/daemon/score.py": DAEMONIZES})
    r = proj.run("t1")
    assert r.code == 0, r.output
    pid = int((proj.root / "evals" / "daemon" / "daemon.pid").read_text())
    result = proj.eval_result("daemon")
    assert result["status"] == "passed"
    assert result["message"].startswith(f"it left pid {pid} (python")
    assert result["message"].endswith("running outside its process group, holding its output; evalrun stopped it")
    assert f"PASS        daemon  1 check, 1 assertion; it left pid {pid} (python" in r.out  # counts, then the note
