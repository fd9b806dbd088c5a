"""A judge's anchors table that no anchors file could hold (a valid report with a count of 10**400)."""

from __future__ import annotations

from pathlib import Path

from evalrun.calibration import calibrate
from evalrun.manifest import load_manifest
from evalrun.results import CheckResult, EvalResult, RunResults, Status
from harness import an_eval, manifest


def _run(tmp_path: Path, both_pass: int) -> RunResults:
    (tmp_path / "a").mkdir()
    (tmp_path / "manifest.toml").write_text(manifest(an_eval("anchors", ["true"], dir="a", anchors={"min_kappa": 0.5})).text)
    loaded = load_manifest(tmp_path / "manifest.toml")
    metrics = {"anchors.both_pass": both_pass, "anchors.only_people": 1, "anchors.only_judge": 1,
               "anchors.both_fail": 3, "anchors.judge": "gpt-x#1"}
    result = EvalResult(name="anchors", tier="t1", dir="a", status=Status.PASSED, metrics=metrics,
                        checks=[CheckResult(name="agreement", assertions=1, passed=True)])
    judged = EvalResult(name="answers", tier="t1", dir="b", status=Status.PASSED,
                        checks=[CheckResult(name="truthful", assertions=1, passed=True, judge="gpt-x#1")])
    results = RunResults(evalrun_version="t", tier="t1", manifest="manifest.toml", started_at="2026-12-04T00:00:00+00:00",
                         evals=[result, judged])
    return calibrate(results, loaded)


def test_an_anchors_count_past_any_file_fails_that_eval_and_the_run_goes_on(tmp_path: Path) -> None:
    calibrated = _run(tmp_path, 10**400)  # it crashed the run after every scorer ran (OverflowError): exit 70
    anchors, judged = calibrated.evals
    assert anchors.status is Status.FAILED
    assert anchors.message == ("anchors.both_pass: 100000000000... is not a count of anchors (at most "
                               "1,000,000,000); the judge could not be measured")
    assert judged.status is Status.PASSED and calibrated.judges == []


def test_an_anchors_table_of_real_counts_is_measured(tmp_path: Path) -> None:
    calibrated = _run(tmp_path, 1_000_000_000)  # the largest count taken: measured, as any table
    assert calibrated.evals[0].status is Status.PASSED
    [cal] = calibrated.judges
    assert cal.anchors == 1_000_000_005 and cal.judged_checks == 1
