"""A judge measured against people: agreement on its anchor set, and the run's judged checks corrected for it.

An eval with ``anchors = {...}`` in the manifest runs the anchors scorer
(``python -m evalrun.scorer.anchors FILE``), whose report carries the
agreement table as metrics (``anchors.both_pass``, ``anchors.only_people``,
``anchors.only_judge``, ``anchors.both_fail``). From it this module computes
the judge's true-positive and true-negative rates, Cohen's kappa and Gwet's
AC1 (flagging when they disagree strongly: unbalanced anchors), and corrects
the pass rate of every other check of the run judged by the same model for
the judge's measured error rates (Rogan-Gladen, with an interval). A judge
below a floor (``min_kappa``, ``min_ac1``) fails its anchors eval: exit 1,
because the judge is part of what checks the product, and a check that stopped
checking has failed.

The arithmetic is evalrun's, never the scorer's: a replayed run (t2) checks it
without a key, and ``merge`` or ``baseline diff`` recompute it from results.
"""

from __future__ import annotations

from dataclasses import replace

from evalrun.manifest import Manifest
from evalrun.plan import split_cell_name
from evalrun.results import EvalResult, JudgeCalibration, RunResults, Status

TABLE = ("both_pass", "only_people", "only_judge", "both_fail")
DISAGREEMENT = 0.3  # |kappa - AC1| above it: the anchors are too unbalanced for kappa to mean much
MAX_COUNT = 1_000_000_000  # anchors a table may count: past it no anchors file was read (10**400 is valid JSON)


def calibrate(results: RunResults, manifest: Manifest) -> RunResults:
    """The run with each anchors eval measured (and failed below its floor) and ``judges`` filled in."""
    floors = {spec.name: spec.anchors for spec in manifest.evals if spec.anchors is not None}
    if not floors:
        return results
    judges: list[JudgeCalibration] = []
    evals: list[EvalResult] = []
    for result in results.evals:
        spec_floors = floors.get(_eval_name(result))
        if spec_floors is None or result.status not in (Status.PASSED, Status.FAILED):
            evals.append(result)
            continue
        table = _table(result)
        if table is None:
            evals.append(result)
            continue
        too_big = [key for key in TABLE if table[key] > MAX_COUNT]
        if too_big:  # no anchors file holds that many: the table is not one, and the judge is not measured
            why = (f"anchors.{too_big[0]}: {str(table[too_big[0]])[:12]}... is not a count of anchors "
                   f"(at most {MAX_COUNT:,}); the judge could not be measured")
            evals.append(replace(result, status=Status.FAILED, message=why))
            continue
        cal = measure(result.name, table, result.metrics.get("anchors.judge"), spec_floors.min_kappa, spec_floors.min_ac1)
        if cal.below and result.status is Status.PASSED:
            why = "the judge agrees with people less than its floor: " + "; ".join(cal.below)
            result = replace(result, status=Status.FAILED, message=why)
        judges.append(cal)
        evals.append(result)
    judged = [r for r in evals if _eval_name(r) not in floors]
    judges = [_with_corrected(cal, judged) for cal in judges]
    return replace(results, evals=evals, judges=judges)


def measure(
    name: str, table: dict[str, int], judge: object, min_kappa: float | None, min_ac1: float | None
) -> JudgeCalibration:
    """The agreement of one judge with people, from its 2x2 table, against its floors."""
    from evalrun.stats import cohen_kappa, gwet_ac1  # judges with anchors only

    a, b, c, d = (table[key] for key in TABLE)
    kappa, ac1 = cohen_kappa(a, b, c, d), gwet_ac1(a, b, c, d)
    below = []
    if min_kappa is not None and (kappa is None or kappa < min_kappa):
        below.append(f"kappa {_num(kappa)} < min_kappa {min_kappa:g}")
    if min_ac1 is not None and (ac1 is None or ac1 < min_ac1):
        below.append(f"AC1 {_num(ac1)} < min_ac1 {min_ac1:g}")
    return JudgeCalibration(
        eval=name,
        judge=judge if isinstance(judge, str) else None,
        anchors=a + b + c + d,
        both_pass=a, only_people=b, only_judge=c, both_fail=d,
        true_positive_rate=_round(a / (a + b)) if a + b else None,
        true_negative_rate=_round(d / (c + d)) if c + d else None,
        kappa=_round(kappa), ac1=_round(ac1),
        disagree=kappa is not None and ac1 is not None and abs(kappa - ac1) > DISAGREEMENT,
        min_kappa=min_kappa, min_ac1=min_ac1, below=below,
    )


def _with_corrected(cal: JudgeCalibration, evals: list[EvalResult]) -> JudgeCalibration:
    model = (cal.judge or "").split("#", 1)[0]
    checks = [
        c for r in evals if r.status in (Status.PASSED, Status.FAILED)
        for c in r.checks if c.judge is not None and (not model or c.judge.split("#", 1)[0] == model)
    ]
    from evalrun.stats import corrected_rate  # judges with anchors only

    passes = sum(1 for c in checks if c.passed)
    corrected = corrected_rate(
        passes, len(checks), (cal.both_pass, cal.both_pass + cal.only_people), (cal.both_fail, cal.both_fail + cal.only_judge)
    )
    return replace(cal, judged_checks=len(checks), judged_passes=passes,
                   corrected=None if corrected is None else tuple(_round(x) for x in corrected))


def _table(result: EvalResult) -> dict[str, int] | None:
    values = {key: result.metrics.get(f"anchors.{key}") for key in TABLE}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values.values()):
        return None
    return values  # type: ignore[return-value]


def _eval_name(result: EvalResult) -> str:
    return split_cell_name(result.name)[0] if result.experiment else result.name


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _num(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.2f}"

