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
    if n - c < k:
        return 1.0
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


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
    if total == 0 or row2 == 0:
        return 1.0
    denominator = math.comb(total, row2)
    low = max(0, passes - (a + b))
    tail = sum(math.comb(passes, x) * math.comb(total - passes, row2 - x) for x in range(low, c + 1))
    return float(Fraction(tail, denominator))


def fisher_greater(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test that the second row passes *more* often than the first."""
    return fisher_less(b, a, d, c)
