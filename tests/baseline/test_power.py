"""Verdicts that know their power: regression, no evidence of change, or too little data to tell.

The statistics are held to scipy's (reference values, dev extra only) and to
textbook tables; the verdicts go through ``compare_to_baseline`` and, end to
end, through the real CLI with the deterministic "flaky" scorer of gate-bites'
repeat cases.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.baseline import compare_to_baseline
from evalrun.baseline.rates import RatedCount
from evalrun.reports_out.baseline_text import format_comparison
from evalrun.results import CheckRate, CheckResult, EvalResult, RepeatSummary, RunResults, Status
from evalrun.stats import (
    cohen_kappa,
    corrected_rate,
    detectable_passes,
    fisher_less,
    gwet_ac1,
    repeats_needed,
    sign_test_worse,
)
from evalrun.verdict import decide_exit_code

from harness.stub_projects import flaky_coin


def scipy_stats():
    """``scipy.stats``, imported by the first test that asks: two seconds of CPU that collecting this module
    would cost every xdist worker. The tests that ask share one worker (``SCIPY``), so one imports it."""
    return pytest.importorskip("scipy.stats", reason="scipy (the dev extra) gives the reference values")

SCIPY = pytest.mark.xdist_group("scipy")



# --- the statistics against scipy and textbooks ------------------------------------------


@SCIPY
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30), st.integers(1, 30))
def test_fisher_less_is_scipys_one_sided_fisher(a: int, b: int, c: int, d: int) -> None:
    # evalrun's table is (before passes, before fails; now passes, now fails); "now passes less" is
    # scipy's alternative "greater" on the same table (the odds ratio of the first row is larger).
    expected = scipy_stats().fisher_exact([[a, b], [c, d]], alternative="greater").pvalue
    assert fisher_less(a, b, c, d) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@SCIPY
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 40), st.integers(0, 40))
def test_sign_test_is_the_exact_one_sided_binomial_test(worse: int, better: int) -> None:
    n = worse + better
    expected = 1.0 if n == 0 else scipy_stats().binomtest(worse, n, 0.5, alternative="greater").pvalue
    assert sign_test_worse(worse, better) == pytest.approx(expected, rel=1e-9)


def test_sign_test_hand_values() -> None:
    assert sign_test_worse(3, 0) == 1 / 8
    assert sign_test_worse(5, 1) == 7 / 64  # C(6,5)+C(6,6) = 7 of 64
    assert sign_test_worse(0, 4) == 1.0
    with pytest.raises(ValueError):
        sign_test_worse(-1, 2)


@SCIPY
@settings(max_examples=120, deadline=None)
@given(st.integers(1, 25).flatmap(lambda bn: st.tuples(st.integers(0, bn), st.just(bn))), st.integers(0, 25),
       st.sampled_from([0.01, 0.05, 0.1, 0.2]))
def test_detectable_passes_is_the_edge_of_significance(base: tuple[int, int], runs: int, alpha: float) -> None:
    bp, bn = base
    caught = detectable_passes(bp, bn, runs, alpha)
    for c in range(runs + 1):
        p = scipy_stats().fisher_exact([[bp, bn - bp], [c, runs - c]], alternative="greater").pvalue
        if abs(p - alpha) < 1e-9:
            continue  # at the edge itself, float rounding decides scipy's side; evalrun's is exact
        assert (p < alpha) == (caught is not None and c <= caught), (c, p, caught)


def test_detectable_passes_examples() -> None:
    # a peer tool calls 18/20 -> 14/20 "noise"; with 20 runs only 12 of 20 or fewer would be caught
    assert detectable_passes(18, 20, 20, 0.05) == 12
    assert detectable_passes(10, 10, 10, 0.05) == 6
    assert detectable_passes(2, 2, 2, 0.05) is None  # 2/2 -> 0/2 is p = 1/6
    with pytest.raises(ValueError):
        detectable_passes(3, 2, 2, 0.05)


@pytest.mark.parametrize(("rate", "floor", "alpha", "needed"), [(1.0, 0.8, 0.05, 21), (0.9, 0.7, 0.05, 24), (1.0, 0.5, 0.05, 7)])
def test_repeats_needed_is_the_first_n_that_catches_the_floor(rate: float, floor: float, alpha: float, needed: int) -> None:
    assert repeats_needed(rate, floor, alpha) == needed
    for n in (needed - 1, needed):
        bp, c = round(rate * n), math.floor(floor * n)
        caught = fisher_less(bp, n - bp, c, n - c) < alpha
        assert caught == (n == needed)


def test_repeats_needed_without_room_below_the_rate() -> None:
    assert repeats_needed(0.8, 0.8, 0.05) is None
    assert repeats_needed(0.8, 0.9, 0.05) is None


# Cohen's kappa: the grant example (Wikipedia "Cohen's kappa": p_o 0.7, p_e 0.5, kappa 0.4) and its two
# paradox tables (kappa 0.1304 and 0.2593); Gwet's AC1 from Gwet (2008)'s formula, computed here exactly.
@pytest.mark.parametrize(
    ("table", "kappa", "ac1"),
    [
        ((20, 5, 10, 15), Fraction(2, 5), (Fraction(7, 10) - Fraction(99, 200)) / (1 - Fraction(99, 200))),
        ((45, 15, 25, 15), Fraction(3, 23), None),
        ((25, 35, 5, 35), Fraction(7, 27), None),
        ((118, 5, 2, 0), None, None),  # Feinstein & Cicchetti's paradox: high agreement, kappa near 0, AC1 high
    ],
)
def test_kappa_and_ac1_on_textbook_tables(table: tuple[int, int, int, int], kappa, ac1) -> None:
    k, a = cohen_kappa(*table), gwet_ac1(*table)
    if kappa is not None:
        assert k == pytest.approx(float(kappa), abs=1e-12)
    if ac1 is not None:
        assert a == pytest.approx(float(ac1), abs=1e-12)
    if table == (118, 5, 2, 0):
        assert k == pytest.approx(-0.0234, abs=1e-4) and a == pytest.approx(0.9408, abs=1e-4)


def test_kappa_is_undefined_when_chance_agreement_is_total() -> None:
    assert cohen_kappa(10, 0, 0, 0) is None and cohen_kappa(0, 0, 0, 0) is None
    assert gwet_ac1(0, 0, 0, 0) is None
    assert gwet_ac1(10, 0, 0, 0) == 1.0


@SCIPY
def test_corrected_rate_inverts_a_known_judge() -> None:
    # a judge with sensitivity 0.9 and specificity 0.8 reports 0.8 pass for a true 6/7:
    # 0.9 * 6/7 + 0.2 * 1/7 = 5.6/7 = 0.8
    estimate, low, high = corrected_rate(80, 100, (45, 50), (40, 50))
    assert estimate == pytest.approx(6 / 7, abs=1e-12)
    assert 0.0 <= low < estimate < high <= 1.0
    # a judge without errors corrects nothing, and its interval is at least the observed rate's own
    perfect = corrected_rate(80, 100, (50, 50), (50, 50))
    wilson = scipy_stats().binomtest(80, 100).proportion_ci(method="wilson")
    assert perfect[0] == pytest.approx(0.8) and perfect[1] <= wilson.low + 1e-9 and perfect[2] >= wilson.high - 1e-9
    assert corrected_rate(80, 100, (25, 50), (25, 50)) is None  # a coin: nothing to correct with
    assert corrected_rate(0, 0, (1, 1), (1, 1)) is None


def test_corrected_rate_keeps_an_interval_where_every_rate_is_extreme() -> None:
    # every judged check passed and the judge erred on no anchor: the delta method would say [1, 1]
    estimate, low, high = corrected_rate(2, 2, (5, 5), (4, 4))
    assert estimate == 1.0 and high == 1.0 and low < 0.6


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.integers(1, 30).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.integers(1, 30).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_corrected_rate_interval_holds_its_estimate(judged, se, sp) -> None:
    out = corrected_rate(judged[0], judged[1], se, sp)
    if se[0] / se[1] + sp[0] / sp[1] <= 1:
        assert out is None
        return
    estimate, low, high = out
    assert 0.0 <= low <= estimate <= high <= 1.0


# --- the three verdicts --------------------------------------------------------------------


def _repeated(rates: dict[str, tuple[int, int]], too_little_data: str = "note", alpha: float = 0.05) -> RunResults:
    checks = [
        CheckResult(name=name, assertions=1, passed=True, rate=CheckRate(runs=runs, passes=passes, seen=runs))
        for name, (passes, runs) in rates.items()
    ]
    runs = max((r for _, r in rates.values()), default=1)
    result = EvalResult(
        name="coin", tier="t1", dir="evals/coin", status=Status.PASSED, checks=checks,
        repeats=RepeatSummary(planned=runs, runs=runs, floor=0.0, alpha=alpha, too_little_data=too_little_data),
    )
    return RunResults(evalrun_version="0", tier="t1", manifest="manifest.toml", started_at="2024-01-01T00:00:00Z",
                      evals=[result])


def _compare(baseline: dict[str, tuple[int, int]], now: RunResults):
    table = {"coin": {name: RatedCount(1, passes, runs) for name, (passes, runs) in baseline.items()}}
    return compare_to_baseline(table, now, {"coin"}, Path("baselines/t1.toml"), False, "evalrun baseline --update t1")


def test_a_drop_not_beyond_chance_is_too_little_data_with_the_detectable_drop() -> None:
    cmp = _compare({"a": (18, 20)}, _repeated({"a": (14, 20)}))
    assert cmp.regressions == []
    [change] = cmp.undecided
    assert change.kind == "too-little-data" and change.detectable == pytest.approx(0.6) and not change.fails
    assert change.message == (
        'coin: check "a" passes 14 of 20 (70%), baseline 18 of 20 (90%): too little data to tell '
        "(with 20 runs, a drop to 0.60 or below would be caught)"
    )
    assert 'note: coin: check "a" passes 14 of 20' in "\n".join(format_comparison(cmp))
    assert decide_exit_code(_repeated({"a": (14, 20)}).evals, cmp, False) == 0


def test_too_little_data_fails_the_run_with_exit_4_when_the_tier_says_so() -> None:
    now = _repeated({"a": (14, 20)}, too_little_data="fail")
    cmp = _compare({"a": (18, 20)}, now)
    assert [c.fails for c in cmp.undecided] == [True]
    assert decide_exit_code(now.evals, cmp, False) == 4
    assert format_comparison(cmp)[0].startswith('unchecked: coin: check "a"')


def test_no_drop_with_power_is_no_evidence_of_change_and_no_drop_without_power_is_too_little_data() -> None:
    assert _compare({"a": (18, 20)}, _repeated({"a": (18, 20)})).undecided == []
    assert _compare({"a": (18, 20)}, _repeated({"a": (19, 20)})).undecided == []
    [powerless] = _compare({"a": (2, 2)}, _repeated({"a": (2, 2)})).undecided
    assert powerless.detectable is None
    assert "with 2 runs no drop could be caught at this alpha; repeat more" in powerless.message


def test_a_drop_beyond_chance_is_still_a_regression_and_not_undecided() -> None:
    cmp = _compare({"a": (10, 10)}, _repeated({"a": (3, 10)}))
    assert [c.kind for c in cmp.regressions] == ["decayed"] and cmp.undecided == []


def test_many_small_drops_paired_by_check_name_are_a_regression() -> None:
    # each check drops 5/5 -> 4/5 (p = 0.5 alone); 6 of 6 moving down is p = 1/64 paired by name
    names = [f"case {i}" for i in range(6)]
    cmp = _compare({n: (5, 5) for n in names}, _repeated({n: (4, 5) for n in names}))
    paired = [c for c in cmp.regressions if c.kind == "decayed-paired"]
    assert len(paired) == 1 and paired[0].p_value == pytest.approx(1 / 64, abs=1e-6)
    assert "6 checks pass less often than in the baseline and 0 more often, paired by check name" in paired[0].message


def test_pairing_is_by_name_not_by_position() -> None:
    # the same rates in another order: every check kept its own rate, nothing moved
    baseline = {"b": (5, 5), "a": (1, 5), "c": (5, 5), "d": (1, 5)}
    now = _repeated({"a": (1, 5), "b": (5, 5), "c": (5, 5), "d": (1, 5)})
    cmp = _compare(baseline, now)
    assert [c for c in cmp.regressions if c.kind == "decayed-paired"] == []


def test_mixed_moves_are_no_paired_regression() -> None:
    names = [f"case {i}" for i in range(6)]
    now = {n: ((4, 5) if i % 2 else (5, 5)) for i, n in enumerate(names)}
    base = {n: ((5, 5) if i % 2 else (4, 5)) for i, n in enumerate(names)}
    cmp = _compare(base, _repeated(now))
    assert [c for c in cmp.regressions if c.kind == "decayed-paired"] == []


# --- end to end ------------------------------------------------------------------------------


def _coin(project):
    return project(flaky_coin(repeat=10, min_pass_rate=0.3).project())


def test_too_little_data_is_said_in_the_summary_results_and_markdown_and_can_fail(project) -> None:
    proj = _coin(project)
    assert proj.run("baseline", "--update", "t1", "-j", "2").code == 0
    r = proj.run("t1", "-j", "2", "--markdown", "m.md", env={"FLAKY_FAIL": "5"})
    assert r.code == 0, r.output
    assert (
        'note: coin: check "answer is right" passes 9 of 10 (90%), baseline 10 of 10 (100%): too little data to tell '
        "(with 10 runs, a drop to 0.60 or below would be caught)"
    ) in r.out.splitlines()
    [change] = proj.results()["baseline"]["undecided"]
    assert change["kind"] == "too-little-data" and change["detectable"] == 0.6
    assert "### Too little data to tell" in (proj.root / "m.md").read_text()
    (proj.root / "manifest.toml").write_text(
        (proj.root / "manifest.toml").read_text().replace("[tiers.t1]\n", '[tiers.t1]\ntoo_little_data = "fail"\n')
    )
    strict = proj.run("t1", "-j", "2", env={"FLAKY_FAIL": "5"})
    assert strict.code == 4, strict.output
    assert any(line.startswith('unchecked: coin: check "answer is right"') for line in strict.out.splitlines())
