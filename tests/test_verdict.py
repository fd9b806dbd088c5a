"""The one exit code, in the README's order: 130, then 1, 3, 4, 5, else 0 — each rule alone and against the next."""

from __future__ import annotations

import pytest

from evalrun.errors import ExitCode
from evalrun.results import BaselineChange, BaselineComparison, EvalResult, Status
from evalrun.reports_out.describe import VERDICT_WORDS
from evalrun.verdict import decide_exit_code


def _eval(status: Status) -> EvalResult:
    return EvalResult(name=f"e-{status.value}", tier="t1", dir="e", status=status)


def _comparison(regressed: bool = False, undecided_fails: bool | None = None) -> BaselineComparison:
    regressions = [BaselineChange(eval="e", kind="vanished-check", message="gone")] if regressed else []
    undecided = [] if undecided_fails is None else [
        BaselineChange(eval="e", kind="too-little-data", message="cannot tell", fails=undecided_fails)]
    return BaselineComparison(path="baselines/t1.toml", exists=True, regressions=regressions, undecided=undecided)


PASSED = _eval(Status.PASSED)


@pytest.mark.parametrize(
    ("statuses", "comparison", "interrupted", "expected"),
    [
        ([Status.PASSED], None, False, ExitCode.OK),
        ([Status.PASSED], _comparison(), False, ExitCode.OK),
        ([], None, False, ExitCode.NOTHING_SELECTED),
        ([], _comparison(), False, ExitCode.NOTHING_SELECTED),
        ([Status.PASSED], None, True, ExitCode.INTERRUPTED),
        ([Status.FAILED], _comparison(regressed=True), True, ExitCode.INTERRUPTED),  # 130 wins over everything
        ([Status.FAILED], None, False, ExitCode.FAILED),
        ([Status.ERROR], None, False, ExitCode.FAILED),
        ([Status.TIMEOUT], None, False, ExitCode.FAILED),
        ([Status.PASSED, Status.FAILED], _comparison(regressed=True), False, ExitCode.FAILED),  # 1 before 3
        ([Status.PASSED], _comparison(regressed=True), False, ExitCode.REGRESSED),
        ([Status.SKIPPED], _comparison(regressed=True), False, ExitCode.REGRESSED),  # 3 before 4
        ([Status.SKIPPED], None, False, ExitCode.UNCHECKED),
        ([Status.INTERRUPTED], None, False, ExitCode.UNCHECKED),
        ([Status.BUDGET], _comparison(), False, ExitCode.UNCHECKED),
        ([Status.FAILED, Status.SKIPPED], None, False, ExitCode.FAILED),  # 1 before 4
        ([Status.PASSED], _comparison(undecided_fails=True), False, ExitCode.UNCHECKED),  # too_little_data = "fail"
        ([Status.PASSED], _comparison(undecided_fails=False), False, ExitCode.OK),  # a note is no verdict
        ([Status.PASSED], _comparison(regressed=True, undecided_fails=True), False, ExitCode.REGRESSED),
        ([], _comparison(undecided_fails=True), False, ExitCode.UNCHECKED),  # 4 before 5
    ],
)
def test_the_first_rule_that_applies_decides(statuses, comparison, interrupted, expected) -> None:
    assert decide_exit_code([_eval(s) for s in statuses], comparison, interrupted) is expected


def test_every_exit_code_has_its_word() -> None:
    assert VERDICT_WORDS == {
        ExitCode.OK: "passed",
        ExitCode.FAILED: "failed",
        ExitCode.USAGE: "usage or configuration error",
        ExitCode.REGRESSED: "baseline regressed",
        ExitCode.UNCHECKED: "not everything was checked",
        ExitCode.NOTHING_SELECTED: "nothing was selected to run",
        ExitCode.INTERRUPTED: "interrupted; partial results",
    }
