"""evalrun.stats against published and reference values (no scipy: literals from the sources named)."""

from __future__ import annotations

import math

import pytest

from evalrun.stats import fisher_greater, fisher_less, pass_at_k, pass_hat_k, wilson_interval


# --- pass@k: Chen et al. 2021 ("Evaluating Large Language Models Trained on Code"), eq. 1 -----------------


def _codex_numpy_estimator(n: int, c: int, k: int) -> float:
    """The paper's own numerically stable listing (Figure 3), transcribed without numpy."""
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),  # pass@1 is the plain pass rate c/n, as the paper notes
        (10, 3, 5, 11 / 12),  # 1 - C(7,5)/C(10,5) = 1 - 21/252
        (10, 0, 5, 0.0),
        (10, 6, 5, 1.0),  # fewer than k failures: some sample of k always passes
        (200, 13, 100, 1 - math.comb(187, 100) / math.comb(200, 100)),
    ],
)
def test_pass_at_k_matches_the_codex_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12)
    assert pass_at_k(n, c, k) == pytest.approx(_codex_numpy_estimator(n, c, k), rel=1e-9)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 9, 1, 0.9),
        (10, 9, 3, 0.7),  # C(9,3)/C(10,3) = 84/120
        (10, 7, 3, 35 / 120),
        (10, 10, 10, 1.0),
        (10, 9, 10, 0.0),
    ],
)
def test_pass_hat_k_is_the_unbiased_all_k_pass_estimator(n: int, c: int, k: int, expected: float) -> None:
    # tau-bench (Yao et al. 2024): pass^k = C(c, k) / C(n, k)
    assert pass_hat_k(n, c, k) == pytest.approx(expected, rel=1e-12)


def test_estimators_refuse_impossible_arguments() -> None:
    with pytest.raises(ValueError):
        pass_at_k(10, 11, 1)
    with pytest.raises(ValueError):
        pass_hat_k(10, 5, 11)


# --- Wilson: Newcombe 1998, "Two-sided confidence intervals for the single proportion", Table I, method 3 ---


@pytest.mark.parametrize(
    ("c", "n", "low", "high"),
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
        (29, 29, 0.8830, 1.0000),
    ],
)
def test_wilson_interval_matches_newcombe_table(c: int, n: int, low: float, high: float) -> None:
    got = wilson_interval(c, n)
    assert round(got[0], 4) == low
    assert round(got[1], 4) == high


def test_wilson_interval_of_no_runs_is_everything() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


# --- Fisher's exact test, one-sided ----------------------------------------------------------------------


def test_fisher_lady_tasting_tea() -> None:
    # Fisher (1935): 3 of 4 cups right each way; the one-sided p-value is 17/70 = 0.2429
    # (R: fisher.test(matrix(c(3, 1, 1, 3), 2), alternative = "greater")$p.value).
    assert fisher_less(3, 1, 1, 3) == pytest.approx(17 / 70, rel=1e-12)
    assert round(fisher_less(3, 1, 1, 3), 4) == 0.2429


@pytest.mark.parametrize(
    ("before", "now", "expected"),
    [
        ((10, 10), (9, 10), 0.5),  # 10/10 -> 9/10 is noise: C(19,9)/C(20,10) = 92378/184756
        ((10, 10), (3, 10), 286 / 184756),  # 10/10 -> 3/10 is decay: C(13,3)/C(20,10) = 0.001548
        ((10, 10), (10, 10), 1.0),
        ((9, 10), (7, 10), 0.2910),  # hypergeometric tail, margins 16 passes of 20, 10 drawn
    ],
)
def test_fisher_one_sided_reference_values(before: tuple[int, int], now: tuple[int, int], expected: float) -> None:
    (bp, bn), (cp, cn) = before, now
    p = fisher_less(bp, bn - bp, cp, cn - cp)
    assert p == pytest.approx(expected, abs=5e-5)


def test_fisher_greater_is_the_mirror() -> None:
    assert fisher_greater(3, 7, 10, 0) == pytest.approx(286 / 184756, rel=1e-12)
    assert fisher_greater(10, 0, 3, 7) == 1.0
