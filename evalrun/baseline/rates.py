"""Pass rates in the baseline: what a repeated eval records, and telling decay from noise.

A repeated eval's checks are baselined with their pass rates (written as
``"check" = { assertions = 3, passes = 9, runs = 10 }``, ``evalrun.baseline.format``);
a plain count stays valid for evals that do not repeat. Read back, such an entry is a
``RatedCount``: an ``int`` (the assertion count, so every assertion-count and
vanished-check rule of ``evalrun.baseline.compare`` reads it unchanged) that also
carries its passes and runs.

A later run's rate is compared with the baseline's by a one-sided Fisher exact
test on the 2x2 table (baseline passes, fails; current passes, fails) at the
eval's ``alpha``: lower beyond chance is a regression (``decayed``), higher
beyond chance makes the baseline stale (``improved``), as does a repeated
check whose baseline entry has no rate yet (``new-rate``). Fisher, not the binomial
test against the baseline's rate, because the baseline's rate is itself a
sample: against a baselined 10/10 the binomial test calls a single failure in
10 certain decay (p = 0), while Fisher's 10/10 -> 9/10 is p = 0.5 (noise) and
10/10 -> 3/10 is p = 0.0015 (decay).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from evalrun.results import BaselineChange, EvalResult
from evalrun.text import plural, quote


class RatedCount(int):
    """An assertion count that also carries the pass rate it was recorded with."""

    passes: int
    runs: int

    def __new__(cls, assertions: int, passes: int, runs: int) -> RatedCount:
        obj = super().__new__(cls, assertions)
        obj.passes = passes
        obj.runs = runs
        return obj

    def __repr__(self) -> str:
        return f"RatedCount({int(self)}, passes={self.passes}, runs={self.runs})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (RatedCount, (int(self), self.passes, self.runs))


# --- what a run records ------------------------------------------------------------


def counts_of(result: EvalResult) -> dict[str, int]:
    """What ``baseline --update`` records for an eval: assertion counts, with the pass rate when it repeats."""
    return {
        c.name: RatedCount(c.assertions, c.rate.passes, c.rate.runs) if c.rate is not None else c.assertions
        for c in result.checks
    }


# --- comparing -----------------------------------------------------------------


def diff_rates(
    name: str,
    old: Mapping[str, int],
    result: EvalResult,
    regressions: list[BaselineChange],
    stale: list[BaselineChange],
    undecided: list[BaselineChange] | None = None,
    skip: set[str] | frozenset[str] = frozenset(),
) -> None:
    """Judge each repeated check's rate against the baseline's: a regression, no evidence of change, or too little data.

    Lower beyond chance is ``decayed`` (a regression); higher beyond chance is
    ``improved`` (stale). A rate that is lower but not beyond chance, or a
    comparison too small to catch any drop, is ``too-little-data`` in
    ``undecided``, with the highest rate this run would have caught. Across
    the eval's checks, paired by name, more checks lower than higher beyond
    chance (exact sign test, McNemar's for pass/fail items) is ``decayed-paired``.
    Checks in ``skip`` (judged by another judge than the baseline's) are not compared.
    """
    if result.repeats is None or result.repeats.partial:
        return  # partial rates are never compared as complete (their eval is not compared at all)
    from evalrun.stats import detectable_passes, fisher_greater, fisher_less, sign_test_worse  # repeated evals only

    alpha = result.repeats.alpha
    fails = result.repeats.too_little_data == "fail"
    current = {c.name: c for c in result.checks if c.rate is not None}
    worse: list[str] = []
    better: list[str] = []
    for check, before in old.items():
        now = current.get(check)
        if now is None or now.rate is None or now.rate.runs == 0 or check in skip:
            continue
        if not isinstance(before, RatedCount):  # the eval repeats now; the baseline has no rate to compare with
            stale.append(BaselineChange(
                eval=name, check=check, kind="new-rate", baseline=int(before), current=now.assertions,
                current_rate=(now.rate.passes, now.rate.runs),
                message=f"{name}: check {quote(check)} has a pass rate now ({now.rate.passes} of {now.rate.runs}); "
                        f"the baseline has none",
            ))
            continue
        bp, bn, cp, cn = before.passes, before.runs, now.rate.passes, now.rate.runs
        if cp * bn < bp * cn:
            worse.append(check)
        elif cp * bn > bp * cn:
            better.append(check)
        lower = fisher_less(bp, bn - bp, cp, cn - cp)
        higher = fisher_greater(bp, bn - bp, cp, cn - cp)
        rates = f"passes {cp} of {cn} ({cp / cn:.0%}), baseline {bp} of {bn} ({bp / bn:.0%})"
        test = "one-sided Fisher exact"
        if lower < alpha:
            regressions.append(_rate_change(
                name, check, "decayed", before, now.assertions, (bp, bn), (cp, cn), lower,
                f"{name}: check {quote(check)} {rates}: lower beyond chance ({test} p = {_p(lower)} < alpha {alpha:g})",
            ))
        elif higher < alpha:
            stale.append(_rate_change(
                name, check, "improved", before, now.assertions, (bp, bn), (cp, cn), higher,
                f"{name}: check {quote(check)} {rates}: higher beyond chance ({test} p = {_p(higher)} < alpha {alpha:g})",
            ))
        elif undecided is not None:
            caught = detectable_passes(bp, bn, cn, alpha)
            if caught is not None and cp * bn >= bp * cn:
                continue  # no drop, and the run could have caught one: no evidence of change
            change = _rate_change(
                name, check, "too-little-data", before, now.assertions, (bp, bn), (cp, cn), lower,
                f"{name}: check {quote(check)} {rates}: too little data to tell ({_power(caught, cn)})",
            )
            undecided.append(replace(change, detectable=None if caught is None else caught / cn, fails=fails))
    p_paired = sign_test_worse(len(worse), len(better))
    if len(worse) > 1 and p_paired < alpha:
        regressions.append(BaselineChange(
            eval=name, kind="decayed-paired", p_value=round(p_paired, 6),
            message=f"{name}: {plural(len(worse), 'check')} {'passes' if len(worse) == 1 else 'pass'} less often than in the baseline and {len(better)} more often, "
                    f"paired by check name: lower beyond chance (exact sign test p = {_p(p_paired)} < alpha {alpha:g})",
        ))


def _power(caught: int | None, runs: int) -> str:
    if caught is None:
        return f"with {plural(runs, 'run')} no drop could be caught at this alpha; repeat more"
    return f"with {plural(runs, 'run')}, a drop to {caught / runs:.2f} or below would be caught"


def _rate_change(eval_name: str, check: str, kind: str, before: int, now: int, baseline_rate: tuple[int, int],
                 current_rate: tuple[int, int], p: float, message: str) -> BaselineChange:
    return BaselineChange(eval=eval_name, check=check, kind=kind, baseline=int(before), current=now, message=message,
                          baseline_rate=baseline_rate, current_rate=current_rate, p_value=round(p, 6))


def _p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.4f}"

