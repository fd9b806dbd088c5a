"""An interrupt at any phase of a run: exit 130, a results file that marks every planned eval, no process left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness import eval_entry, json_scorer

PROBE = """
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


def _wait_for(condition, what: str, deadline_s: float = 60.0) -> None:
    until = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < until, f"gave up waiting for {what}"
        time.sleep(0.05)


def _sigterm_when_ready(proj, args: tuple[str, ...], ready, env: dict[str, str] | None = None, timeout: float = 60):
    """Start ``evalrun ARGS`` fresh, call ``ready(proc)`` until it is, SIGTERM it; (exit code, stdout, stderr)."""
    # fresh, not forked: SIGTERM sent mid-run, its output read while it runs
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun", *args], cwd=proj.root, env=proj.env({"NO_COLOR": "1", **(env or {})}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        ready(proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def test_sigterm_while_probing_stops_the_probe_and_marks_every_eval_interrupted(project) -> None:
    proj = project(
        {
            "manifest.toml": (
                '[tiers.t1]\n[probes.slow]\ncommand = ["python", "probe.py", "probe.pid"]\ntimeout = 120\n'
                + eval_entry("needs-probe", extra='requires = ["slow"]')
                + eval_entry("plain")
            ),
            "probe.py": PROBE,
            "evals/needs-probe/score.py": json_scorer([{"name": "a", "assertions": 1, "passed": True}]),
            "evals/plain/score.py": json_scorer([{"name": "b", "assertions": 1, "passed": True}]),
        }
    )
    pid_file = proj.root / "probe.pid"
    code, out, err = _sigterm_when_ready(
        proj, ("t1",), lambda _: _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip(), "the probe to start")
    )
    probe_pid = int(pid_file.read_text())
    assert code == 130, out + err
    results = json.loads((proj.root / ".evalrun" / "results" / "t1.json").read_text())
    assert results["interrupted"] is True and results["exit_code"] == 130
    assert {e["name"]: e["status"] for e in results["evals"]} == {"needs-probe": "interrupted", "plain": "interrupted"}
    _wait_for(lambda: not _alive(probe_pid), "the probe's process to be stopped", 10.0)
    assert "Traceback" not in err


def test_an_interrupted_baseline_update_exits_130_and_writes_no_baseline(project) -> None:
    proj = project(
        {
            "manifest.toml": '[tiers.t1]\n' + eval_entry("slow"),
            "evals/slow/score.py": "import os, time\nopen('started', 'w').close()\ntime.sleep(60)\n",
        }
    )
    started = proj.root / "evals" / "slow" / "started"
    code, out, err = _sigterm_when_ready(
        proj, ("baseline", "--update", "t1"), lambda _: _wait_for(started.exists, "the scorer to start")
    )
    assert code == 130, out + err
    assert not (proj.root / "baselines" / "t1.toml").exists()
    assert "Traceback" not in err


def test_a_closed_stdout_does_not_change_the_verdict(project, tmp_path: Path) -> None:
    proj = project(
        {
            "manifest.toml": '[tiers.t1]\n' + eval_entry("a") + eval_entry("b"),
            "evals/a/score.py": json_scorer([{"name": "a", "assertions": 1, "passed": True}]),
            "evals/b/score.py": json_scorer([{"name": "b", "assertions": 1, "passed": True}]),
        }
    )
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before evalrun prints a line: `evalrun t1 | head -0`
    try:
        # fresh, not forked: its stdout is a pipe with no reader
        proc = subprocess.run(
            [sys.executable, "-m", "evalrun", "t1"], cwd=proj.root, env=proj.env({"NO_COLOR": "1"}),
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    assert json.loads((proj.root / ".evalrun" / "results" / "t1.json").read_text())["exit_code"] == 0


def test_ctrl_c_at_start_up_is_exit_130_without_a_traceback(project) -> None:
    # Ctrl-C may land while typer and rich are still being imported: still one line and 130.
    from harness import default_sigint

    proj = project({"manifest.toml": eval_entry("a"), "evals/a/score.py": json_scorer([])})
    interrupted = 0
    for delay in (0.0, 0.05, 0.15):
        # fresh, not forked: Ctrl-C while the interpreter imports evalrun
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalrun", "t1"], cwd=proj.root, env=proj.env({"NO_COLOR": "1"}),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        if proc.returncode == 0 or proc.returncode == 1:
            continue  # the run was over before the signal came: nothing to judge at this delay
        # Before the interpreter has set up Ctrl-C, the kernel's default ends it (-2, which shells show as 130).
        assert proc.returncode in (130, -signal.SIGINT), (delay, out, err)
        # Before any of evalrun's code runs (the interpreter still importing the package), Python's own
        # handler prints the interrupt; from evalrun's entry point on, there is never a traceback.
        assert "Traceback" not in err or "evalrun" not in err.split("Traceback", 1)[1], (delay, err)
        interrupted += 1
    assert interrupted, "every run ended before its Ctrl-C: the test judged nothing"


def test_sigterm_while_the_embedded_postgres_starts_writes_results_and_exits_130(project) -> None:
    proj = project(
        {
            "manifest.toml": (
                '[tiers.t2]\n[services.db]\npostgres = "embedded"\n'
                + eval_entry("uses-db", tier="t2", extra='services = ["db"]')
            ),
            "evals/uses-db/score.py": json_scorer([{"name": "a", "assertions": 1, "passed": True}]),
        }
    )

    def service_starting(proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        while line and "starting service db" not in line:
            line = proc.stdout.readline()
        assert line, "evalrun never started the service"

    code, out, err = _sigterm_when_ready(proj, ("t2",), service_starting, env={"CI": "1"}, timeout=90)
    assert code == 130, out + err
    results = json.loads((proj.root / ".evalrun" / "results" / "t2.json").read_text())
    assert results["interrupted"] is True
    assert [e["status"] for e in results["evals"]] == ["interrupted"]
    assert "Traceback" not in err
