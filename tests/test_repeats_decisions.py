"""evalrun.repeats' decisions, field by field: settings, the floor, early stop, and the folded result.

``tests/test_repeats.py`` shows the behaviour; these pin every value a gate
decision rests on (which keys win, the exact floor, when a run is decided,
which run's verdict the eval takes, what the folded result records), so a
changed comparison or constant fails here. Each test kills changes that the
mutation run (``bench/mutate.py``, see CONTRIBUTING.md) found alive.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.manifest import EvalSpec, Manifest
from evalrun.models.transcript import MAX_CALLS
from evalrun.plan import PlannedEval
from evalrun.repeats import (
    EARLY_STOP_MESSAGE,
    K_VALUES,
    RepeatSettings,
    RepeatTracker,
    aggregate,
    aggregate_all,
    expand,
    interrupted_result,
    is_decided,
    plan_settings,
    repeat_as_recorded,
    settings_for,
)
from evalrun.reports_out.describe import describe_repeated_as_recorded
from evalrun.results import CheckResult, EvalResult, SkippedTest, Status

SPEC = EvalSpec(name="coin", tier="t3", dir="evals/coin", run=["python", "score.py"])
PLANNED = PlannedEval(spec=SPEC, dir=Path("/nowhere"))
EARLY = EvalResult(name="coin", tier="t3", dir="d", status=Status.SKIPPED, message=EARLY_STOP_MESSAGE)


def run(*passed: bool, status: Status | None = None, message: str | None = None, **fields) -> EvalResult:
    """One run of "coin": check ``c0``, ``c1``, ... passed or not (message "no <i>" when not)."""
    checks = [CheckResult(name=f"c{i}", assertions=1, passed=p, message=None if p else f"no {i}") for i, p in enumerate(passed)]
    if status is None:
        status = Status.PASSED if all(passed) else Status.FAILED
    return EvalResult(name="coin", tier="t3", dir="evals/coin", status=status, checks=checks, message=message,
                      duration_s=fields.pop("duration_s", 1.0), **fields)


def manifest(tmp_path: Path, tier: dict, spec: dict) -> tuple[Manifest, EvalSpec]:
    m = Manifest.model_validate({
        "path": tmp_path / "manifest.toml", "root": tmp_path, "tiers": {"t3": tier},
        "evals": [{"name": "coin", "tier": "t3", "dir": "d", "run": ["x"], **spec}],
    })
    return m, m.evals[0]


# --- settings --------------------------------------------------------------------------------------------


def test_defaults() -> None:
    s = RepeatSettings()
    assert (s.count, s.floor, s.stop, s.alpha, s.too_little_data, s.repeats) == (1, 1.0, None, 0.05, "note", False)
    assert RepeatSettings(count=2).repeats is True
    assert K_VALUES == (1, 3, 5, 10)
    assert EARLY_STOP_MESSAGE == 'not run: the verdict was already decided (stop = "decided")'
    with pytest.raises(AttributeError):  # a record: read-only
        s.count = 3  # type: ignore[misc]


@pytest.mark.parametrize(("floor", "runs", "required"), [(0.7, 10, 7), (0.5, 3, 2), (1.0, 4, 4), (0.0, 5, 0), (0.34, 3, 2)])
def test_required_passes_are_the_exact_ceiling(floor: float, runs: int, required: int) -> None:
    assert RepeatSettings(count=runs, floor=floor).required(runs) == required


def test_settings_for_takes_the_evals_key_then_the_tiers_then_the_default(tmp_path: Path) -> None:
    m, spec = manifest(tmp_path, {}, {})
    assert settings_for(m, spec) == RepeatSettings()
    m, spec = manifest(tmp_path, {"repeat": 4, "min_pass_rate": 0.5, "stop": "decided", "alpha": 0.1,
                                  "too_little_data": "fail"}, {})
    assert settings_for(m, spec) == RepeatSettings(count=4, floor=0.5, stop="decided", alpha=0.1, too_little_data="fail")
    m, spec = manifest(tmp_path, {"repeat": 4, "min_pass_rate": 0.5, "stop": "decided", "alpha": 0.1, "too_little_data": "fail"},
                       {"repeat": 6, "min_pass_rate": 0.8, "alpha": 0.01, "too_little_data": "note"})
    assert settings_for(m, spec) == RepeatSettings(count=6, floor=0.8, stop="decided", alpha=0.01, too_little_data="note")
    assert settings_for(m, spec, 3) == RepeatSettings(count=3, floor=0.8, stop="decided", alpha=0.01, too_little_data="note")
    assert settings_for(m, spec, 1).count == 1
    planned = [PlannedEval(spec=spec, dir=tmp_path)]
    assert plan_settings(m, planned, None) == {"coin": RepeatSettings(count=6, floor=0.8, stop="decided", alpha=0.01)}


class _Rate:
    def __init__(self, runs: int) -> None:
        self.runs = runs


def test_an_eval_run_once_repeats_as_often_as_its_baseline_recorded() -> None:
    once, thrice = RepeatSettings(), RepeatSettings(count=3)
    settings = {"a": once, "b": once, "c": thrice, "d": once, "e": once}
    recorded = {"a": {"x": _Rate(5), "y": _Rate(7), "z": 3}, "b": {"x": _Rate(1)}, "c": {"x": _Rate(9)},
                "d": {"x": _Rate(2)}}
    out, notes = repeat_as_recorded(settings, recorded, None)
    assert out == {"a": once._replace(count=7), "b": once, "c": thrice, "d": once._replace(count=2),
                   "e": once}
    assert notes == {"a": 7, "d": 2}
    assert describe_repeated_as_recorded("a", 7) == (
        "a: runs 7 times, as its baseline's pass rates were recorded "
        "(set repeat = 7 in the manifest to say so there, or pass --repeat N)")
    assert repeat_as_recorded(settings, recorded, 1) == (settings, {})  # --repeat N decides
    assert repeat_as_recorded(settings, None, None) == (settings, {})
    assert repeat_as_recorded(settings, {}, None) == (settings, {})


def test_expand_makes_count_runs_of_each_in_rounds() -> None:
    other = PlannedEval(spec=SPEC.model_copy(update={"name": "other"}), dir=Path("/nowhere"))
    runs = expand([PLANNED, other], {"coin": RepeatSettings(count=2), "other": RepeatSettings(count=3)})
    assert [(p.name, p.repeat) for p in runs] == [("coin", 0), ("other", 0), ("coin", 1), ("other", 1), ("other", 2)]
    assert expand([], {}) == []


# --- early stop ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("count", "floor", "runs", "decided"),
    [
        # floor 0.8 of 10 is 8 passes: 2 failures leave exactly 8 possible (open), 3 leave 7 (decided: fails)
        (10, 0.8, [run(False)] * 2, False),
        (10, 0.8, [run(False)] * 3, True),
        (10, 0.8, [run(True)] * 7 + [run(False)], False),
        (10, 0.8, [run(True)] * 8, True),
        (10, 0.8, [run(True)] * 7, False),
        (10, 0.8, [run(True)] * 7 + [EARLY], False),  # an early-stopped run is no run
        (3, 1.0, [run(True), run(True)], False),
        (3, 1.0, [run(True), run(False)], True),
        (3, 0.5, [run(True), run(True)], True),  # 2 of 3 reached
        (3, 0.5, [run(False), run(False)], True),  # at most 1 of 3
        (3, 0.5, [run(True), run(False)], False),
        (4, 0.5, [run(True, True), run(True, False)], False),  # c0 reached 2 of 4, c1 still open
        (4, 0.5, [run(True, True), run(True, True)], True),
        (4, 0.5, [run(True, False), run(True, False), run(True, False)], True),  # c1 at most 1 of 4
        (3, 1.0, [run(status=Status.PASSED)], False),  # a run without checks decides nothing
        (3, 1.0, [run(True, status=Status.SKIPPED, message="env X is not set")], True),
        (3, 1.0, [run(True, status=Status.BUDGET)], True),
        (3, 1.0, [run(True, status=Status.INTERRUPTED)], True),
        (3, 1.0, [run(True, status=Status.TIMEOUT)], True),
        (3, 1.0, [run(True, status=Status.FAILED)], True),  # failed with every check passed: the scorer broke
    ],
)
def test_is_decided_at_the_edges(count: int, floor: float, runs: list[EvalResult], decided: bool) -> None:
    assert is_decided(runs, RepeatSettings(count=count, floor=floor, stop="decided")) is decided


def test_the_tracker_stops_a_decided_eval_only_when_it_opted_in(tmp_path: Path) -> None:
    other = PlannedEval(spec=SPEC.model_copy(update={"name": "other"}), dir=tmp_path)
    done: list[EvalResult] = []
    settings = {"coin": RepeatSettings(count=3, stop="decided"), "other": RepeatSettings(count=3), "once": RepeatSettings()}
    once = PlannedEval(spec=SPEC.model_copy(update={"name": "once"}), dir=tmp_path)
    tracker = RepeatTracker([PLANNED, other, once], settings, "t3", on_eval_done=done.append)
    assert tracker.repeats("coin") is True and tracker.repeats("once") is False
    first = run(False)
    assert tracker.record(PLANNED._replace(repeat=0), first) is first
    assert tracker.stopped(PLANNED) is True  # floor 1.0 and a failure: no later run can save it
    tracker.record(other._replace(repeat=0), run(False))
    assert tracker.stopped(other) is False  # the same, but no stop = "decided"
    alone = run(True)
    assert tracker.record(once, alone) is alone and done == []  # a single run is shown by the caller, not here
    assert tracker.stopped(once) is False
    tracker.record(other._replace(repeat=2), run(True))
    assert done == []
    tracker.record(other._replace(repeat=1), run(True))
    assert [(r.name, r.status, r.checks[0].rate.passes) for r in done] == [("other", Status.FAILED, 2)]
    assert [d.repeat for d in done[0].repeats.runs_detail] == [0, 1, 2]


def test_the_tracker_does_not_stop_on_the_last_run_and_runs_without_a_callback(tmp_path: Path) -> None:
    tracker = RepeatTracker([PLANNED], {"coin": RepeatSettings(count=2, stop="decided")}, "t3")
    tracker.record(PLANNED._replace(repeat=0), run(True))
    assert tracker.stopped(PLANNED) is False
    last = run(False)
    assert tracker.record(PLANNED._replace(repeat=1), last) is last
    assert tracker.stopped(PLANNED) is False  # complete: nothing left to stop


# --- folding runs into one result ------------------------------------------------------------------------


def test_a_flaky_check_passes_the_eval_and_says_so() -> None:
    runs = [run(True, True, metrics={"first": 1}, exit_code=0, duration_s=0.00004),
            run(True, False, metrics={"second": 2}, exit_code=1, output_tail="tail 1", duration_s=0.00004),
            run(True, True, duration_s=0.00004), run(True, True, duration_s=0.00004)]
    result = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.75, alpha=0.1, too_little_data="fail"), runs)
    assert result.status is Status.PASSED
    assert result.message == 'flaky: check "c1" passed 3 of 4 (floor 0.75)'
    assert (result.name, result.tier, result.dir, result.experiment) == ("coin", "t3", "evals/coin", None)
    assert result.duration_s == 0.0002  # four runs' time, rounded to 4 places
    assert result.metrics == {"first": 1} and result.exit_code == 0 and result.output_tail == ""
    s = result.repeats
    assert (s.planned, s.runs, s.floor, s.alpha, s.too_little_data, s.stop, s.stopped_early, s.partial) == (
        4, 4, 0.75, 0.1, "fail", None, False, False)
    assert (s.flaky, s.below_floor) == (["c1"], [])
    assert [(d.repeat, d.status, d.exit_code) for d in s.runs_detail] == [
        (0, Status.PASSED, 0), (1, Status.FAILED, 1), (2, Status.PASSED, None), (3, Status.PASSED, None)]
    c0, c1 = result.checks
    assert (c0.passed, c0.message, c0.evidence, c0.rate.flaky, c0.rate.failed_runs) == (True, None, None, False, [])
    assert (c1.passed, c1.rate.flaky, c1.rate.failed_runs, c1.rate.passes, c1.rate.runs, c1.rate.seen) == (
        True, True, [1], 3, 4, 4)
    assert c1.message == "passed 3 of 4 (floor 0.75)"  # at the floor: the first failure's words are not added
    assert c1.evidence == "run 2 (EVALRUN_REPEAT=1): no 1"
    assert c1.rate.pass_at_k == {"1": 0.75, "3": 1.0} and c1.rate.pass_hat_k == {"1": 0.75, "3": 0.25}


def test_a_check_below_the_floor_fails_the_eval_with_its_outcomes() -> None:
    runs = [run(True, False, output_tail="tail 1"), run(True, False, output_tail="tail 2"), run(True, True, output_tail="t3"),
            run(False, False, output_tail="t4")]
    result = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.75), runs)
    assert result.status is Status.FAILED
    assert result.message == ('check "c1" passed 1 of 4 (floor 0.75) ○○●○; '
                              'flaky: check "c0" passed 3 of 4 (floor 0.75)')
    assert result.output_tail == "tail 1"  # the first failing run's
    assert (result.repeats.flaky, result.repeats.below_floor) == (["c0"], ["c1"])
    c1 = result.checks[1]
    assert c1.passed is False and c1.rate.failed_runs == [0, 1, 3] and c1.rate.flaky is False
    assert c1.message == "passed 1 of 4 (floor 0.75): no 1"
    assert c1.evidence == "run 1 (EVALRUN_REPEAT=0): no 1\nrun 2 (EVALRUN_REPEAT=1): no 1\nrun 4 (EVALRUN_REPEAT=3): no 1"


def test_every_run_failing_shows_every_outcome() -> None:
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3), [run(False)] * 3)
    assert result.message == 'check "c0" passed 0 of 3 (floor 1) ○○○'
    assert result.checks[0].rate.wilson_95 == (0.0, 0.561497)  # rounded to 6 places


def test_a_check_absent_from_some_runs_counts_as_not_passed_there() -> None:
    absent = run(True)  # only c0
    runs = [run(True, True), absent, run(True, True)]
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=0.6), runs)
    c1 = result.checks[1]
    assert (c1.rate.passes, c1.rate.runs, c1.rate.seen, c1.rate.failed_runs) == (2, 3, 2, [1])
    assert c1.message == "passed 2 of 3 (floor 0.6); seen in 2 of 3 runs"
    assert c1.evidence == "run 2 (EVALRUN_REPEAT=1): absent from this run's report"
    assert result.message == 'flaky: check "c1" passed 2 of 3 (floor 0.6), seen in 2 of 3 runs'
    below = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=1.0), runs)
    assert below.checks[1].message == "passed 2 of 3 (floor 1); seen in 2 of 3 runs: absent from this run's report"
    assert below.message == 'check "c1" passed 2 of 3 (floor 1), seen in 2 of 3 runs ●○●'


def test_a_check_whose_test_a_run_skipped_is_not_passed_there_and_said_as_a_skip() -> None:
    def skipping(reason: str, name: str = "c1") -> EvalResult:  # c1's test skipped by name in this run's report
        return run(True, skipped_tests=[SkippedTest(name=name, reason=reason)])

    runs = [run(True, True), skipping("too slow"), run(True, True)]
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=1.0), runs)
    c1 = result.checks[1]
    assert c1.passed is False  # a skip is never a pass
    assert (c1.rate.passes, c1.rate.runs, c1.rate.seen, c1.rate.skipped, c1.rate.failed_runs) == (2, 3, 2, 1, [1])
    assert c1.message == ("passed 2 of 3 (floor 1); seen in 2 of 3 runs (skipped in 1): "
                          "skipped in this run's report (too slow)")
    assert c1.evidence == "run 2 (EVALRUN_REPEAT=1): skipped in this run's report (too slow)"
    assert result.message.startswith('check "c1" passed 2 of 3 (floor 1), seen in 2 of 3 runs (skipped in 1) ●○●')
    assert result.checks[0].rate.skipped == 0
    # Two runs skipping it, one without a reason; a skip under another name is no skip of c1: it is absent there.
    runs = [skipping(""), run(True, True), skipping("no gpu"), skipping("too slow", name="c9")]
    c1 = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.25), runs).checks[1]
    assert (c1.rate.passes, c1.rate.seen, c1.rate.skipped, c1.rate.failed_runs) == (1, 1, 2, [0, 2, 3])
    assert c1.passed is True and c1.message == "passed 1 of 4 (floor 0.25); seen in 1 of 4 runs (skipped in 2)"
    assert c1.evidence == ("run 1 (EVALRUN_REPEAT=0): skipped in this run's report\n"
                           "run 3 (EVALRUN_REPEAT=2): skipped in this run's report (no gpu)\n"
                           "run 4 (EVALRUN_REPEAT=3): absent from this run's report")


def test_assertions_are_the_fewest_any_run_made_and_the_judge_is_kept() -> None:
    def one(assertions: int, judge: str | None, passed: bool = True) -> EvalResult:
        check = CheckResult(name="j", assertions=assertions, passed=passed, judge=judge, message=None if passed else "m")
        return EvalResult(name="coin", tier="t3", dir="d", status=Status.PASSED if passed else Status.FAILED, checks=[check])
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=0.5), [one(3, None), one(2, "m#1"), one(4, "m#2")])
    assert result.checks[0].assertions == 2 and result.checks[0].judge == "m#1"
    zero = aggregate(PLANNED, "t3", RepeatSettings(count=2, floor=0.5), [one(0, None, False), one(0, None, False)])
    assert zero.checks[0].assertions == 0


def test_evidence_keeps_ten_failing_runs_and_is_cut() -> None:
    runs = [run(False, message=None)] * 12
    result = aggregate(PLANNED, "t3", RepeatSettings(count=12), runs)
    lines = result.checks[0].evidence.splitlines()
    assert lines == [f"run {k + 1} (EVALRUN_REPEAT={k}): no 0" for k in range(10)]
    long = [EvalResult(name="coin", tier="t3", dir="d", status=Status.FAILED,
                       checks=[CheckResult(name="c0", assertions=1, passed=False, message="x" * 500)])] * 10
    evidence = aggregate(PLANNED, "t3", RepeatSettings(count=10), long).checks[0].evidence
    assert evidence.startswith("run 1 (EVALRUN_REPEAT=0): " + "x" * 500)
    kept, cut = evidence.split("\n... (")
    assert len(kept.encode()) == 4000 and cut == f"{10 * (len('run 1 (EVALRUN_REPEAT=0): ') + 500) + 9 + 1 - 4000} more bytes cut)"


@pytest.mark.parametrize(("runs", "keys"), [(1, ["1"]), (2, ["1"]), (3, ["1", "3"]), (5, ["1", "3", "5"]), (10, ["1", "3", "5", "10"])])
def test_pass_at_k_is_reported_for_k_up_to_the_runs(runs: int, keys: list[str]) -> None:
    result = aggregate(PLANNED, "t3", RepeatSettings(count=max(runs, 2), floor=0.0), [run(True)] * runs + [run(False)] * (max(runs, 2) - runs))
    rate = result.checks[0].rate
    assert list(rate.pass_at_k) == keys == list(rate.pass_hat_k)


def test_rates_are_rounded_to_six_places() -> None:
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=0.0), [run(True), run(False), run(False)])
    rate = result.checks[0].rate
    assert rate.pass_at_k == {"1": 0.333333, "3": 1.0} and rate.pass_hat_k == {"1": 0.333333, "3": 0.0}
    assert rate.wilson_95 == (0.061492, 0.79234)


def test_a_broken_run_gives_the_eval_its_verdict() -> None:
    crashed = run(True, status=Status.ERROR, message="scorer exited 2", exit_code=2, output_tail="boom")
    failed_whole = run(True, status=Status.FAILED, message="no report", exit_code=1)
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=0.5), [run(True, exit_code=0), crashed, failed_whole])
    assert (result.status, result.message, result.exit_code, result.output_tail) == (
        Status.ERROR, "run 2 of 3: scorer exited 2", 2, "boom")
    assert result.repeats.runs == 1 and [c.rate.runs for c in result.checks] == [1]
    timeout = aggregate(PLANNED, "t3", RepeatSettings(count=2, floor=0.5),
                        [run(True), run(True, status=Status.TIMEOUT, message="timed out after 5 s", exit_code=None)])
    assert (timeout.status, timeout.message) == (Status.TIMEOUT, "run 2 of 2: timed out after 5 s")
    whole = aggregate(PLANNED, "t3", RepeatSettings(count=2, floor=0.5), [failed_whole, run(True)])
    assert (whole.status, whole.message, whole.exit_code) == (Status.FAILED, "run 1 of 2: no report", 1)


def test_an_unfinished_run_makes_the_rates_partial_and_takes_its_status() -> None:
    budget = run(status=Status.BUDGET, message="stopped by the budget")
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3, floor=0.5), [run(True, metrics={"m": 1}), budget, budget])
    assert (result.status, result.message) == (Status.BUDGET, "stopped by the budget (after 1 of 3 runs; rates are partial)")
    assert result.repeats.partial is True and result.metrics == {"m": 1}
    assert result.checks[0].rate.runs == 1


def test_skips_only_skip_the_eval_when_no_run_reported() -> None:
    skipped = run(status=Status.SKIPPED, message="env X is not set", metrics={"s": 1})
    result = aggregate(PLANNED, "t3", RepeatSettings(count=2), [skipped, skipped])
    assert (result.status, result.message, result.checks, result.metrics) == (Status.SKIPPED, "env X is not set", [], {"s": 1})
    mixed = aggregate(PLANNED, "t3", RepeatSettings(count=2, floor=0.5), [run(True), skipped])
    assert mixed.status is Status.PASSED and mixed.message is None


def test_an_early_stop_judges_the_floor_over_the_planned_runs() -> None:
    # floor 0.5 of 4 is 2 passes: two passes decided the eval; c1 failed both but 2 more runs could have passed it
    runs = [run(True, False), run(True, False), EARLY, EARLY]
    result = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.5, stop="decided"), runs)
    assert result.status is Status.PASSED
    assert result.repeats.stopped_early is True and result.repeats.runs == 2 and len(result.repeats.runs_detail) == 2
    c1 = result.checks[1]
    assert c1.passed is True and c1.rate.flaky is True and c1.message == "passed 0 of 2 (floor 0.5)"
    assert result.message == ('flaky: check "c1" passed 0 of 2 (floor 0.5); '
                              "stopped early after 2 of 4 runs: the verdict was decided")
    failed = aggregate(PLANNED, "t3", RepeatSettings(count=4, floor=0.75, stop="decided"), [run(False), run(False), EARLY, EARLY])
    assert failed.status is Status.FAILED
    assert failed.message == ('check "c0" passed 0 of 2 (floor 0.75: at most 2 of 4 could pass) ○○; '
                              "stopped early after 2 of 4 runs: the verdict was decided")


def test_models_of_every_run_are_summed() -> None:
    a = {"mode": "replay", "provider": "openai", "models": ["m2", "m1"], "calls": 2,
         "tokens": {"input": 10, "output": 5, "total": 15}, "call_log": [{"n": 1}, {"n": 2}]}
    b = {"mode": "record", "provider": "other", "models": ["m1"], "tokens": {"input": 1}, "calls_not_kept": 3}
    result = aggregate(PLANNED, "t3", RepeatSettings(count=3), [run(True, models=a), run(True), run(True, models=b)])
    assert result.models == {
        "mode": "replay", "provider": "openai", "models": ["m1", "m2"], "calls": 2,
        "tokens": {"input": 11, "output": 5, "total": 15},
        "call_log": [{"n": 1, "run": 1}, {"n": 2, "run": 1}], "calls_not_kept": 3,
    }
    assert aggregate(PLANNED, "t3", RepeatSettings(count=2), [run(True), run(True)]).models is None
    quiet = aggregate(PLANNED, "t3", RepeatSettings(count=2), [run(True, models={"mode": "replay"}), run(True)])
    assert quiet.models == {"mode": "replay", "provider": None, "models": [], "calls": 0,
                            "tokens": {"input": 0, "output": 0, "total": 0}}


def test_a_call_log_is_kept_to_its_bound_and_the_rest_counted() -> None:
    many = {"calls": MAX_CALLS, "call_log": [{"n": i} for i in range(MAX_CALLS)]}
    result = aggregate(PLANNED, "t3", RepeatSettings(count=2), [run(True, models=many), run(True, models={**many, "calls_not_kept": 1})])
    assert len(result.models["call_log"]) == MAX_CALLS and result.models["call_log"][-1] == {"n": MAX_CALLS - 1, "run": 1}
    assert result.models["calls_not_kept"] == MAX_CALLS + 1
    exact = aggregate(PLANNED, "t3", RepeatSettings(count=2), [run(True, models=many), run(True)])
    assert len(exact.models["call_log"]) == MAX_CALLS and "calls_not_kept" not in exact.models


def test_aggregate_all_in_plan_order_with_missing_runs_interrupted(tmp_path: Path) -> None:
    once = PlannedEval(spec=SPEC.model_copy(update={"name": "once"}), dir=tmp_path)
    never = PlannedEval(spec=SPEC.model_copy(update={"name": "never"}), dir=tmp_path)
    settings = {"coin": RepeatSettings(count=3, floor=0.5), "once": RepeatSettings(), "never": RepeatSettings()}
    alone = run(True)
    runs = [PLANNED._replace(repeat=0), once, PLANNED._replace(repeat=1)]
    out = aggregate_all([never, PLANNED, once], runs, [run(True), alone, run(False)], settings, "t3")
    assert len(out) == 2 and out[1] is alone  # in plan order; "never" did not run: nothing to show
    coin = out[0]
    assert coin.status is Status.INTERRUPTED
    assert coin.message == "not run: interrupted (after 2 of 3 runs; rates are partial)"
    assert interrupted_result(PLANNED, "t2") == EvalResult(name="coin", tier="t2", dir="evals/coin",
                                                          status=Status.INTERRUPTED, message="not run: interrupted")


def test_the_words_left_by_the_second_mutation_run() -> None:
    # no run reported: the eval takes the first skip's message and the first made run's metrics
    skips = [run(status=Status.SKIPPED, message="first", metrics={"s": 1}), run(status=Status.SKIPPED, message="second", metrics={"s": 2})]
    result = aggregate(PLANNED, "t3", RepeatSettings(count=2), skips)
    assert (result.message, result.metrics) == ("first", {"s": 1})
    # two flaky checks are joined with "; "; a failed check without a message is "failed"
    silent = EvalResult(name="coin", tier="t3", dir="d", status=Status.FAILED,
                        checks=[CheckResult(name="c0", assertions=1, passed=False), CheckResult(name="c1", assertions=1, passed=False)])
    flaky = aggregate(PLANNED, "t3", RepeatSettings(count=2, floor=0.5), [run(True, True), silent])
    assert flaky.message == 'flaky: check "c0" passed 1 of 2 (floor 0.5); check "c1" passed 1 of 2 (floor 0.5)'
    assert flaky.checks[0].evidence == "run 2 (EVALRUN_REPEAT=1): failed"
    # an early stop below a floor of 1 prints the floor as 1, not 1.0
    early = aggregate(PLANNED, "t3", RepeatSettings(count=3, stop="decided"), [run(False), EARLY, EARLY])
    assert early.message.startswith('check "c0" passed 0 of 1 (floor 1: at most 2 of 3 could pass)')
