"""The statistics of repeated runs: pass@k, pass^k, Wilson intervals, Fisher's exact test.

Stdlib only, exact where it matters: the estimators and the test's tail are
computed with integer binomial coefficients (``math.comb``) and ``Fraction``,
so a p-value near ``alpha`` is decided by arithmetic, not by rounding.

- ``pass_at_k(n, c, k)``: the unbiased estimator of the chance that at least one
  of k samples passes, given c passes in n runs (Chen et al. 2021, "Evaluating
  Large Language Models Trained on Code", eq. 1): 1 - C(n-c, k) / C(n, k).
- ``pass_hat_k(n, c, k)``: the unbiased estimator of the chance that all k
  samples pass (pass^k, Yao et al. 2024, tau-bench): C(c, k) / C(n, k).
- ``wilson_interval(c, n)``: the Wilson score interval of a proportion (Wilson
  1927; Newcombe 1998's "method 3"), 95% by default.
- ``fisher_less(a, b, c, d)``: the one-sided p-value of Fisher's exact test that
  the second row's pass rate is lower than the first's.
"""

from __future__ import annotations

import math
from fractions import Fraction

Z_95 = 1.959963984540054  # the 97.5th percentile of the standard normal distribution


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of ``k`` runs passes, from ``c`` passes in ``n`` runs (unbiased)."""
    _check(n, c, k)
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))  # C(n-c, k) is 0 when n - c < k: 1.0


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all ``k`` runs pass (pass^k), from ``c`` passes in ``n`` runs (unbiased)."""
    _check(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def wilson_interval(c: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of ``c`` successes in ``n`` trials; (0, 1) when ``n`` is 0."""
    if n == 0:
        return (0.0, 1.0)
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    p = c / n
    z2 = z * z
    centre = p + z2 / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    denominator = 1 + z2 / n
    low = 0.0 if c == 0 else (centre - spread) / denominator
    high = 1.0 if c == n else (centre + spread) / denominator
    return (max(0.0, low), min(1.0, high))


def fisher_less(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test on [[a, b], [c, d]] (rows: before, now; columns: passed, not passed).

    Returns P(X <= c) for X, the passes of the second row, hypergeometric with
    the table's margins fixed: small when the second row passes less often than
    the first beyond chance. (R: ``fisher.test(m, alternative = "greater")``
    on the same table.)
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"table cells must be >= 0, got {[a, b, c, d]}")
    row2 = c + d
    passes = a + c
    total = a + b + c + d
    denominator = math.comb(total, row2)
    low = max(0, passes - (a + b))
    tail = sum(math.comb(passes, x) * math.comb(total - passes, row2 - x) for x in range(low, c + 1))
    return float(Fraction(tail, denominator))


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test that the second row passes *more* often than the first."""
    return fisher_less(b, a, d, c)


# --- what a comparison can see ----------------------------------------------------


def detectable_passes(bp: int, bn: int, runs: int, alpha: float) -> int | None:
    """The most passes out of ``runs`` that the one-sided Fisher test still calls lower than ``bp`` of ``bn``.

    A current run with this many passes or fewer is a regression at ``alpha``;
    ``None`` when not even 0 passes would be (the runs are too few to catch
    any drop). ``fisher_less`` grows with the current passes, so the first
    count that is not significant ends the search.
    """
    if not (0 <= bp <= bn and runs >= 0):
        raise ValueError(f"need 0 <= bp <= bn and runs >= 0, got bp={bp}, bn={bn}, runs={runs}")
    found: int | None = None
    for c in range(runs + 1):
        if fisher_less(bp, bn - bp, c, runs - c) >= alpha:
            break
        found = c
    return found


def repeats_needed(rate: float, floor: float, alpha: float, limit: int = 1000) -> int | None:
    """The fewest repeats N (in the baseline and in the run alike) at which a drop from ``rate`` to ``floor`` is caught.

    The baseline records ``round(rate * N)`` passes of N; a run that passes
    ``floor(floor * N)`` of N must then be lower beyond chance at ``alpha``.
    ``None`` when no N up to ``limit`` does (the floor is too close to the rate).
    """
    if not (0 <= floor < rate <= 1):
        return None
    for n in range(1, limit + 1):
        bp = round(rate * n)
        c = math.floor(Fraction(repr(floor)) * n)
        if c < bp and fisher_less(bp, n - bp, c, n - c) < alpha:
            return n
    return None


def sign_test_worse(worse: int, better: int) -> float:
    """The exact one-sided McNemar (sign) test of paired items: P(at least ``worse`` of the discordant pairs got worse).

    Each item pairs with itself by id in the two runs; items that did not move
    carry no evidence. Under no change a discordant item is as likely to have
    got worse as better, so the count is binomial(worse + better, 1/2).
    """
    if worse < 0 or better < 0:
        raise ValueError(f"counts must be >= 0, got worse={worse}, better={better}")
    n = worse + better
    return float(Fraction(sum(math.comb(n, k) for k in range(worse, n + 1)), 2**n))


# --- agreement of a judge with people ------------------------------------------------


def cohen_kappa(both_pass: int, only_people: int, only_judge: int, both_fail: int) -> float | None:
    """Cohen's kappa of two raters on a 2x2 table; ``None`` when chance agreement is total (undefined)."""
    n = both_pass + only_people + only_judge + both_fail
    if n == 0:
        return None
    observed = Fraction(both_pass + both_fail, n)
    people_pass = Fraction(both_pass + only_people, n)
    judge_pass = Fraction(both_pass + only_judge, n)
    chance = people_pass * judge_pass + (1 - people_pass) * (1 - judge_pass)
    if chance == 1:
        return None
    return float((observed - chance) / (1 - chance))


def gwet_ac1(both_pass: int, only_people: int, only_judge: int, both_fail: int) -> float | None:
    """Gwet's AC1 (2008) of two raters on a 2x2 table: chance agreement from the mean prevalence."""
    n = both_pass + only_people + only_judge + both_fail
    if n == 0:
        return None
    observed = Fraction(both_pass + both_fail, n)
    prevalence = (Fraction(both_pass + only_people, n) + Fraction(both_pass + only_judge, n)) / 2
    chance = 2 * prevalence * (1 - prevalence)
    return float((observed - chance) / (1 - chance))


def corrected_rate(
    passes: int, n: int, sensitivity: tuple[int, int], specificity: tuple[int, int], z: float = Z_95
) -> tuple[float, float, float] | None:
    """A judged pass rate corrected for the judge's error rates (Rogan & Gladen 1978), with an interval.

    ``sensitivity`` is (passes the judge gave, of the anchors people passed),
    ``specificity`` (fails the judge gave, of the anchors people failed). The
    estimate (p + Sp - 1) / (Se + Sp - 1) is clipped to [0, 1]. The interval
    takes the Wilson interval of each of the three rates and the extremes of
    the estimate over them (it is monotone in each rate), so it stays honest
    where a delta-method interval collapses to a point (every check passed, a
    judge without errors on few anchors); an interval box in which the judge
    could be no better than chance gives (0, 1) on that side. ``None`` when the
    judge is no better than a coin on these anchors (Se + Sp <= 1) or a count is empty.
    """
    (se_hits, se_n), (sp_hits, sp_n) = sensitivity, specificity
    if n == 0 or se_n == 0 or sp_n == 0:
        return None
    p, se, sp = passes / n, se_hits / se_n, sp_hits / sp_n
    if se + sp - 1 <= 0:
        return None
    clip = lambda x: min(1.0, max(0.0, x))  # noqa: E731
    theta = clip((p + sp - 1) / (se + sp - 1))
    ranges = (wilson_interval(passes, n, z), wilson_interval(se_hits, se_n, z), wilson_interval(sp_hits, sp_n, z))
    corners = []
    for p_ in ranges[0]:
        for se_ in ranges[1]:
            for sp_ in ranges[2]:
                youden = se_ + sp_ - 1
                if youden <= 0:
                    return (theta, 0.0, 1.0)
                corners.append(clip((p_ + sp_ - 1) / youden))
    return (theta, min(min(corners), theta), max(max(corners), theta))
