"""Who judged, in the baseline: a judge swap is reported, never compared as a change of the product.

``baseline --update`` records, per eval (per cell), the identities of the
judges its checks were graded by (``checks[].judge``: the model asked and a
hash of its prompt and rubric, ``evalrun.scorer.judging.identity``), in the
file's ``["/judges"]`` table (its spelling: ``evalrun.baseline.format``).

A later run whose eval was judged by other judges (another model, rubric or
grading prompt) says so, one stale line per eval (a regression under
``strict``), and its judged checks' pass rates are not compared with the
baseline's: a more lenient judge must not read as a fix, nor a stricter one as
a regression. Counts and vanished checks are still compared: they do not
depend on who judged. A baseline written before judges were recorded compares
none (the next update records them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from evalrun.results import BaselineChange, EvalResult, Status
from evalrun.text import plural

Judges = dict[str, tuple[str, ...]]


def judges_of(result: EvalResult) -> tuple[str, ...]:
    """The distinct judge identities of an eval's checks, sorted (empty: nothing was judged)."""
    return tuple(sorted({c.judge for c in result.checks if c.judge}))


def diff_judges(
    recorded: Mapping[str, tuple[str, ...]] | None,
    compared: Mapping[str, EvalResult],
    names: Iterable[str],
    stale: list[BaselineChange],
) -> set[str]:
    """A ``judge-changed`` stale note per eval judged by others than recorded; returns those evals' names.

    ``names``: the baselined evals of this run. An eval whose results carry no
    check records (a counts-only re-judge) is not compared.
    """
    if recorded is None:
        return set()
    changed: set[str] = set()
    for name in names:
        result = compared.get(name)
        if result is None or not result.checks:
            continue
        now, before = judges_of(result), tuple(recorded.get(name, ()))
        if now == before or not now and not before:
            continue
        changed.add(name)
        judged = sum(1 for c in result.checks if c.judge)
        was, is_now = ", ".join(before) or "no judge", ", ".join(now) or "no judge"
        stale.append(BaselineChange(
            eval=name, kind="judge-changed",
            message=f"{name}: the judge changed ({was} -> {is_now}); "
                    f"{plural(judged, 'judged check')} not compared by pass rate",
        ))
    return changed


def updated_judges(
    old: Mapping[str, tuple[str, ...]] | None, results: Iterable[EvalResult], keep: Iterable[str]
) -> Judges:
    """What ``baseline --update`` records: the judges of each eval that passed this run, else the old entry."""
    out: Judges = {}
    passed = {r.name: r for r in results if r.status is Status.PASSED}
    for name in sorted(keep):
        if name in passed:
            ids = judges_of(passed[name])
            if ids:
                out[name] = ids
        elif old is not None and name in old:
            out[name] = tuple(old[name])
    return out
