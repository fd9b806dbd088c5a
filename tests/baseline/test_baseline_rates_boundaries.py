"""Pass rates in the baseline, pinned at every boundary: the alpha a p-value meets exactly, equal rates,
one and two checks in the paired test, the limits of a rate entry, and every message word for word."""

from __future__ import annotations

import pickle
from dataclasses import asdict

import pytest

from evalrun.baseline.rates import RatedCount, counts_of, diff_rates
from evalrun.baseline.read import parse_rate_entry
from evalrun.errors import BaselineError
from evalrun.results import CheckRate, CheckResult, EvalResult, RepeatSummary, Status
from evalrun.stats import fisher_greater, fisher_less, sign_test_worse

FIX = "run the fix"
ENTRY = "{ assertions = N, passes = N, runs = N }"


def _result(alpha: float = 0.05, partial: bool = False, too_little_data: str = "note", repeats: bool = True,
            **rates: tuple[int, int] | None) -> EvalResult:
    checks = [CheckResult(name=name, assertions=2, passed=True,
                          rate=None if rate is None else CheckRate(runs=rate[1], passes=rate[0], seen=rate[1]))
              for name, rate in rates.items()]
    summary = RepeatSummary(planned=10, runs=10, floor=0.0, alpha=alpha, partial=partial,
                            too_little_data=too_little_data)
    return EvalResult(name="e", tier="t1", dir="evals/e", status=Status.PASSED, exit_code=0, checks=checks,
                      repeats=summary if repeats else None)


def _diff(old, result, undecided=True, skip=frozenset()):
    regressions, stale = [], []
    later = [] if undecided else None
    diff_rates("e", old, result, regressions, stale, later, skip=skip)
    return regressions, stale, later


def _rated(passes: int, runs: int, assertions: int = 2) -> RatedCount:
    return RatedCount(assertions, passes, runs)


# --- lower and higher beyond chance ----------------------------------------------------


def test_decayed_exactly() -> None:
    regressions, stale, undecided = _diff({"c": _rated(10, 10)}, _result(c=(5, 10)))
    assert stale == [] and undecided == []
    [change] = regressions
    assert asdict(change) == {
        "eval": "e", "check": "c", "kind": "decayed", "baseline": 2, "current": 2,
        "message": 'e: check "c" passes 5 of 10 (50%), baseline 10 of 10 (100%): lower beyond chance '
                   "(one-sided Fisher exact p = 0.0163 < alpha 0.05)",
        "baseline_rate": (10, 10), "current_rate": (5, 10), "p_value": 0.016254, "detectable": None, "fails": False,
    }


def test_improved_exactly() -> None:
    regressions, stale, undecided = _diff({"c": _rated(5, 10, assertions=3)}, _result(c=(10, 10)))
    assert regressions == [] and undecided == []
    [change] = stale
    assert asdict(change) == {
        "eval": "e", "check": "c", "kind": "improved", "baseline": 3, "current": 2,
        "message": 'e: check "c" passes 10 of 10 (100%), baseline 5 of 10 (50%): higher beyond chance '
                   "(one-sided Fisher exact p = 0.0163 < alpha 0.05)",
        "baseline_rate": (5, 10), "current_rate": (10, 10), "p_value": 0.016254, "detectable": None, "fails": False,
    }


def test_a_tiny_p_value_is_shown_in_two_significant_digits() -> None:
    [change] = _diff({"c": _rated(20, 20)}, _result(c=(10, 20)))[0]
    assert fisher_less(20, 0, 10, 10) < 0.001
    assert change.message.endswith("(one-sided Fisher exact p = 0.00022 < alpha 0.05)")
    assert change.p_value == 0.000218


def test_a_p_value_equal_to_alpha_is_not_beyond_chance() -> None:
    assert fisher_less(10, 0, 9, 1) == 0.5 and fisher_greater(9, 1, 10, 0) == 0.5
    regressions, stale, undecided = _diff({"c": _rated(10, 10)}, _result(alpha=0.5, c=(9, 10)))
    assert regressions == [] and stale == [] and [u.kind for u in undecided] == ["too-little-data"]
    regressions, stale, undecided = _diff({"c": _rated(9, 10)}, _result(alpha=0.5, c=(10, 10)))
    assert regressions == [] and stale == [] and undecided == []
    # just above the p-value, both are beyond chance
    assert [c.kind for c in _diff({"c": _rated(10, 10)}, _result(alpha=0.5000001, c=(9, 10)))[0]] == ["decayed"]
    assert [c.kind for c in _diff({"c": _rated(9, 10)}, _result(alpha=0.5000001, c=(10, 10)))[1]] == ["improved"]


# --- too little data -------------------------------------------------------------------


def test_a_drop_not_beyond_chance_is_too_little_data_with_what_could_be_caught() -> None:
    regressions, stale, undecided = _diff({"c": _rated(10, 10)}, _result(c=(9, 10)))
    assert regressions == [] and stale == []
    [change] = undecided
    assert asdict(change) == {
        "eval": "e", "check": "c", "kind": "too-little-data", "baseline": 2, "current": 2,
        "message": 'e: check "c" passes 9 of 10 (90%), baseline 10 of 10 (100%): too little data to tell '
                   "(with 10 runs, a drop to 0.60 or below would be caught)",
        "baseline_rate": (10, 10), "current_rate": (9, 10), "p_value": 0.5, "detectable": 0.6, "fails": False,
    }


def test_a_run_too_small_to_catch_any_drop_is_too_little_data_even_at_the_same_rate() -> None:
    [change] = _diff({"c": _rated(1, 1)}, _result(too_little_data="fail", c=(1, 1)))[2]
    assert change.message == ('e: check "c" passes 1 of 1 (100%), baseline 1 of 1 (100%): too little data to tell '
                              "(with 1 run no drop could be caught at this alpha; repeat more)")
    assert (change.detectable, change.fails, change.p_value) == (None, True, 1.0)


def test_the_same_rate_with_other_run_counts_that_could_catch_a_drop_is_no_change() -> None:
    # 5 of 10 and 10 of 20 are the same rate: neither worse nor better, nothing to tell
    assert _diff({"c": _rated(5, 10)}, _result(c=(10, 20))) == ([], [], [])
    assert _diff({"c": _rated(10, 10)}, _result(c=(10, 10))) == ([], [], [])


def test_without_an_undecided_list_nothing_is_undecided() -> None:
    assert _diff({"c": _rated(10, 10)}, _result(c=(9, 10)), undecided=False) == ([], [], None)


# --- what is not compared ------------------------------------------------------------


def test_an_eval_that_does_not_repeat_or_stopped_partway_is_not_compared() -> None:
    old = {"c": _rated(10, 10)}
    assert _diff(old, _result(repeats=False, c=(0, 10))) == ([], [], [])
    assert _diff(old, _result(partial=True, c=(0, 10))) == ([], [], [])


def test_checks_without_a_rate_now_with_no_runs_absent_or_skipped_are_not_compared() -> None:
    old = {"norate": _rated(10, 10), "noruns": _rated(10, 10), "absent": _rated(10, 10), "skipped": _rated(10, 10)}
    result = _result(norate=None, noruns=(0, 0), skipped=(0, 10))
    assert _diff(old, result, skip={"skipped"}) == ([], [], [])
    assert [c.check for c in _diff(old, result)[0]] == ["skipped"]


def test_a_baselined_count_without_a_rate_makes_the_rate_new() -> None:
    regressions, stale, undecided = _diff({"c": 3}, _result(c=(4, 5)))
    assert regressions == [] and undecided == []
    [change] = stale
    assert asdict(change) == {
        "eval": "e", "check": "c", "kind": "new-rate", "baseline": 3, "current": 2,
        "message": 'e: check "c" has a pass rate now (4 of 5); the baseline has none',
        "baseline_rate": None, "current_rate": (4, 5), "p_value": None, "detectable": None, "fails": False,
    }


# --- paired by check name -------------------------------------------------------------


def _drops(n: int, alpha: float, **more: tuple[int, int]):
    old = {f"c{i}": _rated(10, 10) for i in range(n)} | {k: _rated(*v[0]) for k, v in more.items()}
    now = {f"c{i}": (9, 10) for i in range(n)} | {k: v[1] for k, v in more.items()}
    return [c for c in _diff(old, _result(alpha=alpha, **now))[0] if c.kind == "decayed-paired"]


def test_paired_decay_exactly() -> None:
    assert sign_test_worse(3, 0) == 0.125
    [change] = _drops(3, 0.2)
    assert asdict(change) == {
        "eval": "e", "check": None, "kind": "decayed-paired", "baseline": None, "current": None,
        "message": "e: 3 checks pass less often than in the baseline and 0 more often, paired by check name: "
                   "lower beyond chance (exact sign test p = 0.1250 < alpha 0.2)",
        "baseline_rate": None, "current_rate": None, "p_value": 0.125, "detectable": None, "fails": False,
    }


def test_paired_decay_boundaries() -> None:
    assert _drops(3, 0.125) == []  # p equal to alpha
    assert sign_test_worse(2, 0) == 0.25 and len(_drops(2, 0.3)) == 1  # two checks are enough
    assert sign_test_worse(1, 0) == 0.5 and _drops(1, 0.6) == []  # one check alone is never "paired"
    # a check at the same rate is neither worse nor better; one that rose counts against the decay
    assert len(_drops(2, 0.3, same=((5, 10), (10, 20)))) == 1
    assert sign_test_worse(2, 1) == 0.5 and _drops(2, 0.3, rose=((5, 10), (6, 10))) == []
    [change] = _drops(3, 0.32, rose=((5, 10), (6, 10)))
    assert change.message.startswith("e: 3 checks pass less often than in the baseline and 1 more often,")


# --- reading an entry ------------------------------------------------------------------


@pytest.mark.parametrize(("value", "problem"), [
    ({"assertions": 1, "passes": 1, "runs": 1, "extra": 1}, "unknown key 'extra'"),
    ({"assertions": 1, "passes": 1, "zz": 1, "aa": 1}, "unknown key 'aa'"),
    ({"assertions": 1, "runs": 1}, "missing 'passes'"),
    ({"passes": 1}, "missing 'assertions'"),
])
def test_an_entry_of_other_keys(value, problem) -> None:
    with pytest.raises(BaselineError) as caught:
        parse_rate_entry("b.toml: [e] c", value, FIX)
    assert str(caught.value) == f"b.toml: [e] c: {problem}; a pass-rate entry is {ENTRY}; {FIX}"


@pytest.mark.parametrize(("key", "number"), [("assertions", -1), ("passes", True), ("runs", 1.0), ("runs", "2")])
def test_an_entry_number_that_is_no_count(key, number) -> None:
    value = {"assertions": 1, "passes": 1, "runs": 2, key: number}
    with pytest.raises(BaselineError) as caught:
        parse_rate_entry("W", value, FIX)
    assert str(caught.value) == f"W: {key} must be an integer >= 0, got {number!r}; {FIX}"


@pytest.mark.parametrize(("passes", "runs"), [(3, 2), (0, 0)])
def test_an_entry_with_more_passes_than_runs_or_no_runs(passes, runs) -> None:
    with pytest.raises(BaselineError) as caught:
        parse_rate_entry("W", {"assertions": 0, "passes": passes, "runs": runs}, FIX)
    assert str(caught.value) == f"W: passes ({passes}) must be at most runs ({runs}) and runs > 0; {FIX}"


def test_an_entry_at_its_limits_is_read() -> None:
    entry = parse_rate_entry("W", {"runs": 1, "assertions": 0, "passes": 1}, FIX)
    assert (type(entry), int(entry), entry.passes, entry.runs) == (RatedCount, 0, 1, 1)
    assert parse_rate_entry("W", {"runs": 3, "assertions": 7, "passes": 0}, FIX).passes == 0


def test_a_rated_count_is_its_assertion_count_and_survives_pickling() -> None:
    count = RatedCount(3, 9, 10)
    assert count == 3 and repr(count) == "RatedCount(3, passes=9, runs=10)"
    back = pickle.loads(pickle.dumps(count))
    assert (type(back), int(back), back.passes, back.runs) == (RatedCount, 3, 9, 10)


def test_counts_of_records_a_rate_only_for_checks_that_repeat() -> None:
    counts = counts_of(_result(rated=(9, 10), plain=None))
    assert counts == {"rated": 2, "plain": 2}
    assert repr(counts["rated"]) == "RatedCount(2, passes=9, runs=10)" and type(counts["plain"]) is int


# --- the words of each verdict -----------------------------------------------------------


def test_an_equal_rate_does_not_count_as_worse_in_the_paired_test() -> None:
    assert _drops(1, 0.3, same=((5, 10), (10, 20))) == []  # worse 1, better 0: a lone drop is never paired


def test_alpha_is_shown_as_a_short_number() -> None:
    alpha = 0.1234567
    [decayed] = _diff({"c": _rated(10, 10)}, _result(alpha=alpha, c=(5, 10)))[0]
    [improved] = _diff({"c": _rated(5, 10)}, _result(alpha=alpha, c=(10, 10)))[1]
    paired = _drops(3, alpha + 0.01)
    assert decayed.message.endswith("< alpha 0.123457)") and improved.message.endswith("< alpha 0.123457)")
    assert paired[0].message.endswith("< alpha 0.133457)")


def test_p_values_in_the_message_and_the_record() -> None:
    # p = 0.001976...: four decimals (0.0020), not two significant digits (0.002)
    [change] = _diff({"c": _rated(3, 3)}, _result(c=(1, 21)))[0]
    assert change.message.endswith("(one-sided Fisher exact p = 0.0020 < alpha 0.05)") and change.p_value == 0.001976
    # 7 checks each a little lower: paired p = 1/128 = 0.0078125, recorded to six places
    [paired] = _drops(7, 0.05)
    assert paired.p_value == 0.007812 and "(exact sign test p = 0.0078 < alpha 0.05)" in paired.message


def test_names_are_quoted_as_json_keeping_their_letters() -> None:
    [change] = _diff({"café \"x\"": _rated(10, 10)}, _result(**{"café \"x\"": (5, 10)}))[0]
    assert change.message.startswith('e: check "café \\"x\\"" passes 5 of 10')
    [new] = _diff({"é": 3}, _result(**{"é": (4, 5)}))[1]
    assert new.message == 'e: check "é" has a pass rate now (4 of 5); the baseline has none'
