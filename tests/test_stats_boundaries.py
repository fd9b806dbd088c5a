"""evalrun.stats at the edges where a gate decides: exact values, every threshold on both sides, every refusal.

The values are worked out by hand with ``Fraction`` (binomial coefficients
written out in the comments) or taken from scipy (the dev extra) for the
Wilson interval; a p-value that lands exactly on ``alpha`` is built from a
table whose tail is 1/20 or 1/6, so ``<`` against ``<=`` is decided by the
arithmetic. Each test kills changes that the mutation run
(``bench/mutate.py``, see CONTRIBUTING.md) found alive.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from statistics import NormalDist

import pytest

from evalrun.stats import (
    Z_95,
    cohen_kappa,
    corrected_rate,
    detectable_passes,
    fisher_greater,
    fisher_less,
    gwet_ac1,
    pass_at_k,
    pass_hat_k,
    repeats_needed,
    sign_test_worse,
    wilson_interval,
)

# --- pass@k, pass^k --------------------------------------------------------------------------------------


def test_pass_at_k_exact_values_around_the_all_samples_pass_shortcut() -> None:
    assert pass_at_k(5, 2, 2) == float(1 - Fraction(3, 10))  # 1 - C(3,2)/C(5,2)
    assert pass_at_k(5, 3, 2) == float(1 - Fraction(1, 10))  # n - c == k: 1 - C(2,2)/C(5,2), not 1
    assert pass_at_k(5, 4, 2) == 1.0  # n - c < k: every choice of 2 holds a pass
    assert pass_at_k(5, 5, 5) == 1.0
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(4, 1, 1) == 0.25


def test_pass_hat_k_exact_values() -> None:
    assert pass_hat_k(5, 3, 2) == float(Fraction(3, 10))  # C(3,2)/C(5,2)
    assert pass_hat_k(5, 0, 1) == 0.0
    assert pass_hat_k(5, 5, 5) == 1.0


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k])
def test_estimators_take_every_count_at_the_edges_and_refuse_one_beyond(estimator) -> None:
    for n, c, k in [(5, 0, 1), (5, 5, 1), (5, 0, 5), (5, 5, 5), (1, 0, 1), (1, 1, 1)]:
        assert 0.0 <= estimator(n, c, k) <= 1.0
    for n, c, k in [(5, -1, 1), (5, 6, 1), (5, 2, 0), (5, 2, 6)]:
        with pytest.raises(ValueError, match=rf"^need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}$"):
            estimator(n, c, k)


# --- Wilson ----------------------------------------------------------------------------------------------


def test_z_95_is_the_normal_quantile() -> None:
    assert Z_95 == pytest.approx(NormalDist().inv_cdf(0.975), rel=1e-15)


@pytest.mark.xdist_group("scipy")  # with tests/baseline/test_power.py's: one worker imports scipy
@pytest.mark.parametrize(("c", "n"), [(0, 1), (1, 1), (0, 7), (1, 7), (3, 7), (6, 7), (7, 7), (81, 263), (2, 3)])
def test_wilson_interval_is_scipys_to_the_last_digits(c: int, n: int) -> None:
    scipy_stats = pytest.importorskip("scipy.stats", reason="scipy (the dev extra) gives the reference values")
    for level in (0.95, 0.80):
        ref = scipy_stats.binomtest(c, n).proportion_ci(confidence_level=level, method="wilson")
        low, high = wilson_interval(c, n) if level == 0.95 else wilson_interval(c, n, NormalDist().inv_cdf(0.9))
        assert low == pytest.approx(ref.low, rel=1e-12, abs=1e-15)
        assert high == pytest.approx(ref.high, rel=1e-12, abs=1e-15)
    # the interval ends exactly at 0 and 1 where every run failed or passed
    assert (wilson_interval(c, n)[0] == 0.0) == (c == 0)
    assert (wilson_interval(c, n)[1] == 1.0) == (c == n)


def test_wilson_interval_refuses_impossible_counts() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(5, 0) == (0.0, 1.0)  # no runs: nothing known, whatever the count
    for c, n in [(-1, 3), (4, 3)]:
        with pytest.raises(ValueError, match=rf"^need 0 <= c <= n, got c={c}, n={n}$"):
            wilson_interval(c, n)


# --- Fisher ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # P(X <= c), X the second row's passes, hypergeometric: sum C(passes, x) C(fails, row2 - x) / C(total, row2)
        ((3, 0, 0, 3), Fraction(1, 20)),  # C(3,0)C(3,3)/C(6,3)
        ((3, 0, 1, 2), Fraction(4, 20)),  # 4 passes of 6, 3 drawn, x >= 1: C(4,1)C(2,2)/C(6,3)
        ((2, 1, 1, 2), Fraction(1 + 9, 20)),  # 3 passes of 6, 3 drawn, x = 0 and 1: C(3,0)C(3,3) + C(3,1)C(3,2)
        ((4, 1, 2, 3), Fraction(6 + 60, 252)),  # 6 passes of 10, 5 drawn, x = 1, 2: C(6,1)C(4,4) + C(6,2)C(4,3)
        ((5, 0, 0, 1), Fraction(1, 6)),  # a second row of one run: C(5,0)C(1,1)/C(6,1)
        ((2, 3, 0, 4), Fraction(35, 126)),  # 2 passes of 9, 4 drawn, x = 0: C(7,4)/C(9,4)
        ((0, 0, 0, 0), Fraction(1)),
        ((4, 2, 0, 0), Fraction(1)),  # no current runs: no evidence
        ((0, 0, 2, 1), Fraction(1)),  # no baseline runs: every pass is the second row's
        ((0, 3, 0, 2), Fraction(1)),
    ],
)
def test_fisher_less_exact_tails(table: tuple[int, int, int, int], expected: Fraction) -> None:
    assert fisher_less(*table) == float(expected)


def test_fisher_greater_is_the_mirror_exactly() -> None:
    assert fisher_greater(0, 3, 3, 0) == float(Fraction(1, 20))
    assert fisher_greater(1, 2, 3, 0) == fisher_less(2, 1, 0, 3) == float(Fraction(4, 20))  # C(2,0)C(4,3)/C(6,3)


def test_fisher_less_takes_empty_cells_and_refuses_negative_ones() -> None:
    assert fisher_less(0, 1, 1, 0) == 1.0
    for table in [(-1, 0, 0, 0), (0, -1, 0, 0), (0, 0, -1, 0), (0, 0, 0, -1)]:
        with pytest.raises(ValueError, match=r"^table cells must be >= 0, got \[" + ", ".join(map(str, table)) + r"\]$"):
            fisher_less(*table)


# --- what a comparison can see ---------------------------------------------------------------------------


def test_a_p_value_exactly_at_alpha_is_no_regression() -> None:
    # 3 of 3 before, 0 of 3 now: p = C(3,0)C(3,3)/C(6,3) = 1/20, which is 0.05 in floating point too
    assert fisher_less(3, 0, 0, 3) == 0.05
    assert detectable_passes(3, 3, 3, 0.05) is None
    assert detectable_passes(3, 3, 3, 0.0500001) == 0
    # 5 of 5 before, 0 of 1 now: p = 1/6
    assert detectable_passes(5, 5, 1, float(Fraction(1, 6))) is None
    assert detectable_passes(5, 5, 1, 0.17) == 0


def test_detectable_passes_is_the_last_significant_count() -> None:
    # 3/3 before, c/4 now: c = 0 is C(3,0)C(4,4)/C(7,4) = 1/35; c = 1 is C(4,1)C(3,3)/C(7,4) = 4/35
    assert fisher_less(3, 0, 0, 4) == float(Fraction(1, 35))
    assert fisher_less(3, 0, 1, 3) == float(Fraction(4, 35))
    assert detectable_passes(3, 3, 4, 0.05) == 0
    assert detectable_passes(3, 3, 4, float(Fraction(4, 35)) + 1e-9) == 1
    assert detectable_passes(3, 3, 4, float(Fraction(4, 35))) == 0
    assert detectable_passes(10, 10, 10, 0.05) == 6


def test_detectable_passes_takes_the_edges_and_refuses_beyond() -> None:
    assert detectable_passes(0, 0, 0, 0.05) is None
    assert detectable_passes(0, 5, 5, 0.05) is None  # nothing passed before: no drop to catch
    assert detectable_passes(5, 5, 0, 0.05) is None  # no runs now
    for bp, bn, runs in [(-1, 3, 3), (4, 3, 3), (2, 3, -1)]:
        with pytest.raises(ValueError, match=rf"^need 0 <= bp <= bn and runs >= 0, got bp={bp}, bn={bn}, runs={runs}$"):
            detectable_passes(bp, bn, runs, 0.05)


def test_repeats_needed_at_an_exact_p_value() -> None:
    # rate 1, floor 0: N runs all passed before, none now: p = 1/C(2N, N): 1/2, 1/6, 1/20 (not < 0.05), 1/70
    assert repeats_needed(1.0, 0.0, 0.05) == 4
    assert repeats_needed(1.0, 0.0, 0.0500001) == 3
    assert repeats_needed(1.0, 0.0, 0.6) == 1
    assert repeats_needed(1.0, 0.0, 0.05, limit=4) == 4
    assert repeats_needed(1.0, 0.0, 0.05, limit=3) is None
    # rate 0.5 of N: round(0.5 * N) passes (banker's rounding), floor 0: N = 6 gives 3/6 -> 0/6, p = C(9,6)/C(12,6)
    assert repeats_needed(0.5, 0.0, 0.1) == 6
    assert fisher_less(3, 3, 0, 6) == float(Fraction(84, 924)) < 0.1  # N = 6: C(9,6)/C(12,6)
    assert fisher_less(2, 3, 0, 5) == float(Fraction(56, 252)) > 0.1  # N = 5: 2/5 -> 0/5, C(8,5)/C(10,5)


def test_repeats_needed_only_for_a_floor_below_a_rate_in_0_1() -> None:
    assert repeats_needed(0.5, 0.5, 0.9) is None  # floor == rate: nothing to catch, even at a loose alpha
    assert repeats_needed(0.5, 0.6, 0.9) is None
    assert repeats_needed(0.9, -0.1, 0.05) is None
    assert repeats_needed(1.5, 0.5, 0.05) is None
    assert repeats_needed(0.0, 0.0, 0.9) is None
    assert repeats_needed(1.0, 0.99, 0.05, limit=50) is None  # a drop of 1 in 100 is not caught in 50 runs


def test_sign_test_exact_values_and_edges() -> None:
    assert sign_test_worse(0, 0) == 1.0
    assert sign_test_worse(0, 3) == 1.0
    assert sign_test_worse(3, 0) == float(Fraction(1, 8))
    assert sign_test_worse(2, 1) == float(Fraction(3 + 1, 8))  # C(3,2) + C(3,3) of 2^3
    assert sign_test_worse(4, 2) == float(Fraction(15 + 6 + 1, 64))
    for worse, better in [(-1, 0), (0, -1), (-1, 5)]:
        with pytest.raises(ValueError, match=rf"^counts must be >= 0, got worse={worse}, better={better}$"):
            sign_test_worse(worse, better)


# --- agreement -------------------------------------------------------------------------------------------


def test_kappa_and_ac1_exact_on_an_asymmetric_table() -> None:
    # both 20, only people 6, only judge 9, neither 15; n = 50; p_o = 35/50
    # people pass 26/50, judge pass 29/50; kappa chance = 26*29/2500 + 24*21/2500 = 1258/2500
    observed, chance = Fraction(35, 50), Fraction(26 * 29 + 24 * 21, 2500)
    assert cohen_kappa(20, 6, 9, 15) == float((observed - chance) / (1 - chance))
    prevalence = (Fraction(26, 50) + Fraction(29, 50)) / 2
    chance1 = 2 * prevalence * (1 - prevalence)
    assert gwet_ac1(20, 6, 9, 15) == float((observed - chance1) / (1 - chance1))


def test_kappa_and_ac1_on_one_item() -> None:
    assert cohen_kappa(0, 1, 0, 0) == 0.0  # chance 0: agreement 0 is kappa 0
    assert cohen_kappa(0, 0, 0, 0) is None
    assert cohen_kappa(0, 0, 0, 1) is None  # chance agreement total
    assert gwet_ac1(1, 0, 0, 0) == 1.0
    assert gwet_ac1(0, 1, 0, 0) == -1.0  # prevalence 1/2, chance 1/2, agreement 0
    assert gwet_ac1(0, 0, 0, 0) is None


# --- corrected rate --------------------------------------------------------------------------------------


def _box(passes: int, n: int, se: tuple[int, int], sp: tuple[int, int]) -> tuple[float, float]:
    """The extremes of (p + Sp - 1) / (Se + Sp - 1), clipped to [0, 1], over the corners of the Wilson box."""
    values = []
    for p_, se_, sp_ in product(wilson_interval(passes, n), wilson_interval(*se), wilson_interval(*sp)):
        values.append(min(1.0, max(0.0, (p_ + sp_ - 1) / (se_ + sp_ - 1))))
    return min(values), max(values)


def test_corrected_rate_exact_estimate_and_interval() -> None:
    estimate, low, high = corrected_rate(70, 100, (45, 50), (40, 50))
    assert estimate == (0.7 + 0.8 - 1) / (0.9 + 0.8 - 1)
    assert (low, high) == _box(70, 100, (45, 50), (40, 50))
    assert 0.0 < low < estimate < high < 1.0
    # the same through another z
    z = NormalDist().inv_cdf(0.9)
    _, low80, high80 = corrected_rate(70, 100, (45, 50), (40, 50), z=z)
    assert low < low80 < high80 < high


def test_corrected_rate_clips_an_estimate_above_one_and_below_zero() -> None:
    estimate, low, high = corrected_rate(50, 50, (90, 100), (90, 100))  # judged rate above the judge's sensitivity
    assert estimate == 1.0 and high == 1.0 and 0.0 < low < 1.0
    estimate, low, high = corrected_rate(0, 50, (90, 100), (90, 100))  # below its false-positive rate
    assert estimate == 0.0 and low == 0.0 and 0.0 < high < 1.0


def test_corrected_rate_where_the_box_reaches_a_coin_is_0_to_1() -> None:
    # Se = Sp = 2/3 on 3 anchors each: better than a coin, but the Wilson box holds Se + Sp < 1
    assert corrected_rate(5, 10, (2, 3), (2, 3)) == ((0.5 + 2 / 3 - 1) / (2 / 3 + 2 / 3 - 1), 0.0, 1.0)


def test_corrected_rate_refuses_a_coin_and_empty_counts() -> None:
    assert corrected_rate(5, 10, (1, 2), (1, 2)) is None  # Se + Sp == 1 exactly
    assert corrected_rate(5, 10, (1, 2), (2, 5)) is None  # below
    assert corrected_rate(5, 10, (9, 10), (2, 10)) is not None  # Se + Sp = 1.1: usable
    assert corrected_rate(0, 0, (9, 10), (9, 10)) is None
    assert corrected_rate(5, 10, (0, 0), (9, 10)) is None
    assert corrected_rate(5, 10, (9, 10), (0, 0)) is None
    assert corrected_rate(1, 1, (1, 1), (1, 1)) is not None  # one of each is enough to compute
