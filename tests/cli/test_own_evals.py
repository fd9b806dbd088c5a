"""The repository's own t1 evals: green on this tree, and able to fail.

``evalrun t1`` on the repository's manifest must pass with every expected
check (the one end-to-end run of every case); and each gate-bites check must
fail when its expectation is broken on purpose (``GATE_BITES_BREAK``: every
case can be broken in every mode, and one case per mode is run broken via
``GATE_BITES_CASES``: the exit mode under evalrun beside an unbroken case, the
text and status modes alone), as must manifest-errors when a case's
expectation is wrong, so neither eval is a gate that cannot fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from harness import REPO, warm_evalrun

GATE_BITES = REPO / "evals" / "gate-bites"
MANIFEST_ERRORS = REPO / "evals" / "manifest-errors"
EVALS_LIB = REPO / "evals" / "lib"  # both scorers run evalrun through evals/lib/evalrun_forks.py

GATE_BITES_CHECKS = [
    "a failing check fails the gate",
    "a check with zero assertions fails",
    "a report with no checks fails",
    "a non-zero exit fails despite a passing report",
    "an invalid report fails and names the field",
    "a timeout kills the scorer's whole process group",
    "a crash shows the exception line, not a stack frame",
    "a missing scorer program is named",
    "a passing project passes",
    "nothing selected exits 5",
    "a bad manifest is a configuration error",
    "a vanished check is a regression",
    "a weakened check is a regression",
    "a vanished eval is a regression",
    "a stale baseline is a note, not a failure",
    "a stale baseline is a regression under --strict-baseline",
    "baseline --update refuses a failing state",
    "an unmet precondition skips loudly, never a pass",
    'skips = "fail" turns a skip into a failure',
    "an unmet tier guard refuses the tier, no scorer starts",
    "a check passing 7 of 10 under floor 0.8 fails",
    "a check passing 9 of 10 over floor 0.8 passes and is listed as flaky",
    "a pass rate falling from 10 of 10 to 3 of 10 is a regression",
    "a pass rate falling from 10 of 10 to 9 of 10 is noise",
]
MANIFEST_ERROR_CASES = [
    "dir-outside.toml",
    "duplicate-names.toml",
    "empty-run.toml",
    "invalid-toml.toml",
    "missing-dir.toml",
    "missing-run.toml",
    "t1-requires-tcp.toml",
    "timeout-negative.toml",
    "timeout-zero.toml",
    "unknown-key.toml",
    "unknown-tier.toml",
]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_") and k not in ("GATE_BITES_BREAK", "GATE_BITES_CASES")}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def _evalrun(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return warm_evalrun(REPO, *args, env=env, timeout=300)


def _run_scorer(folder: Path, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run a scorer directly, as evalrun would: report and scratch folder in tmp_path."""
    report = tmp_path / "report.json"
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [sys.executable, "score.py"],
        cwd=folder,
        env=_clean_env(EVALRUN_REPORT=str(report), EVALRUN_WORKDIR=str(work), **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(report.read_text())


def test_own_t1_is_green_with_every_expected_check(tmp_path: Path) -> None:
    out = tmp_path / "t1.json"
    proc = _evalrun(["t1", "-j", "2", "--json", str(out)], _clean_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(out.read_text())
    by_name = {e["name"]: e for e in results["evals"]}
    assert all(e["status"] == "passed" for e in results["evals"]), proc.stdout
    expected = {
        "gate-bites": GATE_BITES_CHECKS,
        "manifest-errors": [f"rejects {name}" for name in MANIFEST_ERROR_CASES],
    }
    for name, checks in expected.items():
        got = by_name[name]["checks"]
        assert [c["name"] for c in got] == checks
        assert all(c["passed"] and c["assertions"] >= 5 for c in got), got


def _gate_bites_module() -> ModuleType:
    """evals/gate-bites/score.py as a module: its cases and its break switch, nothing run."""
    spec = importlib.util.spec_from_file_location("gate_bites_score", GATE_BITES / "score.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_gate_bites_case_can_be_broken_in_every_mode() -> None:
    # The green t1 run above shows each case's expectations hold for the real
    # outcome; so a mode breaks a case exactly when it changes an expectation.
    # Every case has an exit code, a text or line to mark, and statuses to
    # replace, so each check fails in every mode (shown end to end, one case
    # per mode, below).
    gate = _gate_bites_module()
    assert [case.check for case in gate.CASES] == GATE_BITES_CHECKS
    for case in gate.CASES:
        exit_, text, status = (gate.break_expectations((case,), f"{mode}:{case.id}")[0] for mode in gate.BREAK_MODES)
        assert exit_.exit == case.exit + 100, case.id
        assert case.texts or case.lines, f"{case.id}: nothing for the text mode to break"
        assert all(t.endswith("[broken on purpose]") for t in text.texts + text.lines), case.id
        assert status.statuses and "broken-on-purpose" in {*status.statuses, *status.statuses.values()}, case.id
    assert gate.break_expectations(gate.CASES, "") == gate.CASES


@pytest.mark.parametrize(
    ("mode", "case", "check", "explains"),
    [
        ("text", "bad-manifest", "a bad manifest is a configuration error", "[broken on purpose]"),
        ("status", "skips-fail", 'skips = "fail" turns a skip into a failure', "broken-on-purpose"),
    ],
)
def test_a_gate_bites_check_fails_when_its_expectation_is_broken(
    tmp_path: Path, mode: str, case: str, check: str, explains: str
) -> None:
    _, report = _run_scorer(GATE_BITES, tmp_path, GATE_BITES_CASES=case, GATE_BITES_BREAK=mode)
    (only,) = report["checks"]
    assert only["name"] == check
    assert only["passed"] is False
    assert explains in only["message"], only["message"]


def test_one_broken_case_fails_the_gate_bites_eval_under_evalrun(tmp_path: Path) -> None:
    # A copy of the eval in a project of its own (no baseline to miss the
    # cases left out), running two cases, one of them broken (the exit mode).
    shutil.copytree(GATE_BITES, tmp_path / "evals" / "gate-bites", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(EVALS_LIB, tmp_path / "evals" / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "manifest.toml").write_text(
        '[[evals]]\nname = "gate-bites"\ntier = "t1"\ndir = "evals/gate-bites"\nrun = ["python", "score.py"]\n'
    )
    out = tmp_path / "t1.json"
    proc = warm_evalrun(tmp_path, "t1", "-j", "2", "--json", str(out),
                        env=_clean_env(GATE_BITES_CASES="passing,nothing-selected", GATE_BITES_BREAK="exit:passing"),
                        timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (gate,) = json.loads(out.read_text())["evals"]
    assert gate["status"] == "failed"
    assert gate["message"] == 'check "a passing project passes" failed: exit code: expected 100, got 0'
    passed = {c["name"]: c["passed"] for c in gate["checks"]}
    assert passed == {"a passing project passes": False, "nothing selected exits 5": True}
    assert 'FAIL        gate-bites  check "a passing project passes" failed' in proc.stdout


@pytest.mark.parametrize(
    ("variable", "setting", "says"),
    [
        ("GATE_BITES_BREAK", "exit:no-such-case", "GATE_BITES_BREAK='exit:no-such-case': use MODE[:CASE]"),
        ("GATE_BITES_BREAK", "loud", "GATE_BITES_BREAK='loud': use MODE[:CASE]"),
        ("GATE_BITES_CASES", "passing,no-such-case", "GATE_BITES_CASES='passing,no-such-case': unknown case 'no-such-case'"),
    ],
)
def test_gate_bites_refuses_an_unknown_setting(tmp_path: Path, variable: str, setting: str, says: str) -> None:
    proc = subprocess.run(
        [sys.executable, "score.py"],
        cwd=GATE_BITES,
        env=_clean_env(EVALRUN_REPORT=str(tmp_path / "r.json"), **{variable: setting}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith(says)
    assert not (tmp_path / "r.json").exists()


def test_manifest_errors_fails_on_a_wrong_expectation_or_a_valid_manifest(tmp_path: Path) -> None:
    # A copy of the eval with two of its real cases: one left as it is, one
    # expecting the wrong place, and a manifest that is not broken at all.
    copy = tmp_path / "manifest-errors"
    (copy / "cases").mkdir(parents=True)
    shutil.copytree(EVALS_LIB, tmp_path / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(MANIFEST_ERRORS / "score.py", copy / "score.py")
    shutil.copy(MANIFEST_ERRORS / "cases" / "unknown-key.toml", copy / "cases" / "unknown-key.toml")
    wrong = (MANIFEST_ERRORS / "cases" / "timeout-zero.toml").read_text().replace('evals[1] ("slow")', 'evals[0] ("fast")')
    (copy / "cases" / "timeout-zero.toml").write_text(wrong)
    (copy / "cases" / "valid.toml").write_text(
        '# expect: evals[0] ("ok").run: must not be empty\n'
        '[[evals]]\nname = "ok"\ntier = "t1"\ndir = "."\nrun = ["python", "-c", "pass"]\n'
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    _, report = _run_scorer(copy, scratch)
    by_name = {c["name"]: c for c in report["checks"]}
    assert list(by_name) == ["rejects timeout-zero.toml", "rejects unknown-key.toml", "rejects valid.toml"]
    assert by_name["rejects unknown-key.toml"]["passed"] is True
    assert by_name["rejects timeout-zero.toml"]["passed"] is False
    assert "the line starts with" in by_name["rejects timeout-zero.toml"]["message"]
    assert by_name["rejects valid.toml"]["passed"] is False
    assert by_name["rejects valid.toml"]["message"] == "evalrun dry: exit code: expected 2, got 0"
