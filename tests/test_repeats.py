"""evalrun.repeats and evalrun.baseline_rates as functions: folding runs, early-stop decisions, rate entries."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evalrun.baseline import load_baseline, write_baseline
from evalrun.baseline.rates import RatedCount
from evalrun.manifest import EvalSpec
from evalrun.plan import PlannedEval
from evalrun.repeats import EARLY_STOP_MESSAGE, RepeatSettings, aggregate, expand, fold_skipped_tests, is_decided
from evalrun.results import CheckResult, EvalResult, SkippedTest, Status

SPEC = EvalSpec(name="coin", tier="t3", dir="evals/coin", run=["python", "score.py"])
PLANNED = PlannedEval(spec=SPEC, dir=Path("/nowhere"))


def run(*passed: bool, status: Status = Status.PASSED, message: str | None = None) -> EvalResult:
    checks = [CheckResult(name=f"c{i}", assertions=1, passed=p, message=None if p else "no") for i, p in enumerate(passed)]
    if status is Status.PASSED and not all(passed):
        status = Status.FAILED
    return EvalResult(name="coin", tier="t3", dir="evals/coin", status=status, checks=checks, message=message,
                      duration_s=1.0)


def test_expand_schedules_runs_in_rounds() -> None:
    other = PlannedEval(spec=SPEC.model_copy(update={"name": "other"}), dir=Path("/nowhere"))
    runs = expand([PLANNED, other], {"coin": RepeatSettings(count=3), "other": RepeatSettings(count=1)})
    assert [(p.name, p.repeat) for p in runs] == [("coin", 0), ("other", 0), ("coin", 1), ("coin", 2)]


def test_floor_is_exact_for_decimal_rates() -> None:
    # 0.7 * 10 is 7.000000000000001 in floating point; 7 of 10 meets a 0.7 floor
    assert RepeatSettings(count=10, floor=0.7).required(10) == 7
    assert RepeatSettings(count=10, floor=0.75).required(10) == 8


@pytest.mark.parametrize(
    ("floor", "runs", "decided"),
    [
        (1.0, [run(False)], True),  # floor 1.0 and one failure
        (1.0, [run(True)] * 9, False),
        (0.8, [run(False)] * 2, False),
        (0.8, [run(False)] * 3, True),  # 3 failures of 10: at most 7 can pass
        (0.8, [run(True)] * 8, True),  # 8 passes of every check: the floor is reached
        (0.8, [run(True, False)] * 2 + [run(True, True)] * 5, False),
        (0.8, [run(True, status=Status.ERROR)], True),  # a crash decides it
    ],
)
def test_is_decided(floor: float, runs: list[EvalResult], decided: bool) -> None:
    assert is_decided(runs, RepeatSettings(count=10, floor=floor, stop="decided")) is decided


def test_an_interrupted_run_makes_the_rates_partial() -> None:
    interrupted = EvalResult(name="coin", tier="t3", dir="d", status=Status.INTERRUPTED, message="not run: interrupted")
    result = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.5), [run(True), run(False), interrupted, interrupted])
    assert result.status is Status.INTERRUPTED
    assert result.repeats is not None and result.repeats.partial and result.repeats.runs == 2
    assert result.checks[0].rate is not None and (result.checks[0].rate.passes, result.checks[0].rate.runs) == (1, 2)
    assert "after 2 of 4 runs; rates are partial" in (result.message or "")


def test_early_stopped_runs_are_not_counted() -> None:
    skipped = EvalResult(name="coin", tier="t3", dir="d", status=Status.SKIPPED, message=EARLY_STOP_MESSAGE)
    result = aggregate(PLANNED, "t3", RepeatSettings(count=4, stop="decided"), [run(False), skipped, skipped, skipped])
    assert result.status is Status.FAILED
    assert result.repeats is not None and result.repeats.stopped_early and result.repeats.runs == 1
    assert len(result.repeats.runs_detail) == 1


def test_a_precondition_skip_skips_the_eval() -> None:
    skipped = EvalResult(name="coin", tier="t3", dir="d", status=Status.SKIPPED, message="env X is not set")
    result = aggregate(PLANNED, "t3", RepeatSettings(count=2), [skipped, skipped])
    assert result.status is Status.SKIPPED and result.message == "env X is not set"


@pytest.mark.parametrize("name", ["plain", "with space", 'quote " and \\ backslash', "dotted.name", "ünïcode", "tab\there"])
def test_rate_entries_survive_a_write_and_read(tmp_path: Path, name: str) -> None:
    path = tmp_path / "t3.toml"
    data = {name: {name: RatedCount(3, 9, 10), "plain count": 4}, "other": {"x": 1}}
    write_baseline(path, data, "evalrun baseline --update t3")
    back = load_baseline(path)
    assert back == {name: {name: 3, "plain count": 4}, "other": {"x": 1}}
    entry = back[name][name]
    assert isinstance(entry, RatedCount) and (entry.passes, entry.runs) == (9, 10)
    assert "passes = 9, runs = 10 }" in path.read_text()


@pytest.mark.parametrize("floor", [0.5, 0.75, 1.0])
def test_early_stop_never_changes_a_verdict(floor: float) -> None:
    """Exhaustively, for two checks over four runs: whenever is_decided says stop, every way the
    remaining runs could go gives the same eval verdict, and that verdict is what the early stop reports."""
    import itertools

    count = 4
    settings = RepeatSettings(count=count, floor=floor, stop="decided")
    outcomes = list(itertools.product([True, False], repeat=2))  # one run: (check 0 passed, check 1 passed)
    skipped = EvalResult(name="coin", tier="t3", dir="d", status=Status.SKIPPED, message=EARLY_STOP_MESSAGE)
    stops = 0
    for made in range(1, count):
        for prefix in itertools.product(outcomes, repeat=made):
            runs = [run(*o) for o in prefix]
            if not is_decided(runs, settings):
                continue
            stops += 1
            finals = {
                aggregate(PLANNED, "t3", settings, runs + [run(*o) for o in rest]).status
                for rest in itertools.product(outcomes, repeat=count - made)
            }
            assert len(finals) == 1, (prefix, finals)
            early = aggregate(PLANNED, "t3", settings, runs + [skipped] * (count - made))
            assert early.status in finals, (prefix, early.status, finals)
    assert stops > 0


def skipping(*tests: tuple[str, str], passed: bool = True) -> EvalResult:
    return replace(run(passed), skipped_tests=[SkippedTest(name=n, reason=w) for n, w in tests])


def test_skipped_tests_fold_each_once_with_how_often_each_reason_was_given() -> None:
    runs = [
        skipping(("a", "x"), ("b", ""), ("a", "x")),  # "a" twice in one report: once for that run
        skipping(("a", "x"), ("b", ""), ("c", "r1")),
        skipping(("a", "x"), ("c", "r2")),
        skipping(("a", "x"), ("c", "r3"), ("c", "r4"), ("b", "")),
    ]
    assert fold_skipped_tests(runs) == [
        SkippedTest(name="a", reason="x"),
        SkippedTest(name="b", reason="skipped in 3 of 4 runs"),
        SkippedTest(name="c", reason="r1 in 1 of 4 runs, r2 in 1 of 4 runs, r3 in 1 of 4 runs, 1 other reason"),
    ]
    assert fold_skipped_tests([run(True)] * 3) == []


def test_a_folded_eval_keeps_its_skips_whatever_its_verdict() -> None:
    settings = RepeatSettings(count=2)
    failed = aggregate(PLANNED, "t3", settings, [skipping(("a", "x")), skipping(("a", "x"), passed=False)])
    assert failed.status is Status.FAILED and failed.skipped_tests == [SkippedTest(name="a", reason="x")]
    assert failed.message is not None and failed.message.endswith("; tests skipped: a (x)")
    crashed = aggregate(PLANNED, "t3", settings, [skipping(("a", "x")), run(True, status=Status.ERROR, message="boom")])
    assert crashed.status is Status.ERROR and crashed.message == "run 2 of 2: boom"
    assert crashed.skipped_tests == [SkippedTest(name="a", reason="x")]
