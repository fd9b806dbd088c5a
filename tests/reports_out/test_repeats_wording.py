"""The words and colours of the repeats summary, exactly: pass-rate lines, flaky lines, outcome marks.

Kept apart from ``tests/test_repeats_decisions.py``: these functions are
wording (they move to ``reports_out/``), and only their import line should
change when they do.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from evalrun.manifest import EvalSpec
from evalrun.plan import PlannedEval
from evalrun.repeats import EARLY_STOP_MESSAGE, FlakyCheck, RepeatSettings, aggregate, outcome_marks
from evalrun.reports_out.describe import describe_repeats, flaky_line, rate_line
from evalrun.reports_out.summary import repeat_lines as summary_lines
from evalrun.results import CheckResult, EvalResult, Status

PLANNED = PlannedEval(spec=EvalSpec(name="coin", tier="t3", dir="evals/coin", run=["python", "s.py"]), dir=Path("/nowhere"))
EARLY = EvalResult(name="coin", tier="t3", dir="d", status=Status.SKIPPED, message=EARLY_STOP_MESSAGE)


def run(*passed: bool) -> EvalResult:
    checks = [CheckResult(name=f"c{i}", assertions=1, passed=p) for i, p in enumerate(passed)]
    return EvalResult(name="coin", tier="t3", dir="d", status=Status.PASSED if all(passed) else Status.FAILED, checks=checks)


def test_summary_lines_of_a_flaky_and_a_failing_check() -> None:
    result = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.75),
                       [run(True, False, False), run(False, True, False), run(True, True, True), run(True, True, True)])
    assert summary_lines([result]) == [
        ("pass rates:", None),
        ("  coin: 4 of 4 runs, floor 0.75", None),
        ('    "c0": 3/4 passed (75%, 95% CI 30%-95%), pass@3 1.00, pass^3 0.25', None),
        ('    "c1": 3/4 passed (75%, 95% CI 30%-95%), pass@3 1.00, pass^3 0.25', None),
        ('    "c2": 2/4 passed (50%, 95% CI 15%-85%), pass@3 1.00, pass^3 0.00', "red"),
        ("flaky (2):", "yellow"),
        ('  FLAKY coin: check "c0" passed 3 of 4 (floor 0.75)', "yellow"),
        ('  FLAKY coin: check "c1" passed 3 of 4 (floor 0.75)', "yellow"),
    ]


def test_summary_lines_leave_out_single_runs_and_say_nothing_without_repeats() -> None:
    assert summary_lines([run(True)]) == []
    two = aggregate(PLANNED, "t3", RepeatSettings(count=2), [run(True), run(True)])
    assert summary_lines([run(True), two]) == [
        ("pass rates:", None),
        ("  coin: 2 of 2 runs, floor 1", None),
        ('    "c0": 2/2 passed (100%, 95% CI 34%-100%)', None),  # pass@k only from k = 3 on
    ]


def test_describe_repeats_of_an_early_stop_and_a_partial_run() -> None:
    early = aggregate(PLANNED, "t3", RepeatSettings(count=4, stop="decided"), [run(False), EARLY, EARLY, EARLY])
    assert describe_repeats(early) == '1 of 4 runs, floor 1, stopped early (stop = "decided"): rates from 1 run'
    partial = dataclasses.replace(early, repeats=dataclasses.replace(early.repeats, stopped_early=False, partial=True))
    assert describe_repeats(partial) == "1 of 4 runs, floor 1, partial: not every run finished"


def test_rate_line_of_a_check_absent_from_a_run_and_of_no_runs() -> None:
    absent = EvalResult(name="coin", tier="t3", dir="d", status=Status.PASSED,
                        checks=[CheckResult(name="c1", assertions=1, passed=True)])
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=0.5), [run(True, True), absent, run(True, True)])
    c0 = next(c for c in result.checks if c.name == "c0")
    assert rate_line(c0) == '"c0": 2/3 passed (67%, 95% CI 21%-94%), pass@3 1.00, pass^3 0.00, seen in 2 of 3 runs'
    empty = dataclasses.replace(c0, rate=dataclasses.replace(c0.rate, runs=0, passes=0, seen=0, pass_at_k={}))
    assert rate_line(empty).startswith('"c0": 0/0 passed (-, 95% CI')


def test_flaky_line_and_outcome_marks() -> None:
    result = aggregate(PLANNED, "t3", RepeatSettings(count=5, floor=0.6), [run(True), run(False), run(True), run(False), run(True)])
    check = result.checks[0]
    assert flaky_line(FlakyCheck(eval=result.name, check=check, floor=result.repeats.floor)) == 'coin: check "c0" passed 3 of 5 (floor 0.6)'
    assert outcome_marks(check.rate) == "●○●○●"
    odd = aggregate(PLANNED, "t3", RepeatSettings(count=2, floor=0.1234567), [run(True), run(False)])
    assert flaky_line(FlakyCheck(eval=odd.name, check=odd.checks[0], floor=odd.repeats.floor)) == 'coin: check "c0" passed 1 of 2 (floor 0.123457)'  # six digits
