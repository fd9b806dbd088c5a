"""``--last-failed`` (``--lf``): only what went wrong in the tier's last run.

pytest's ``--lf``, read from the tier's results file: the evals that failed,
errored or timed out, and those whose baseline comparison found a regression.
When the last run had nothing wrong (or there is no readable results file),
every planned eval runs, as pytest does by default, and the note says why.
What it leaves out joins ``filtered_out`` (listed as not compared, and the run
is a filtered one in the history).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from evalrun.errors import EvalrunError, file_label
from evalrun.plan import Plan
from evalrun.results import load_results


@dataclass(frozen=True)
class LastFailedSelection:
    plan: Plan
    note: str  # one line for the run's output: what was kept, or why everything runs


def last_failed_names(path: Path) -> tuple[set[str] | None, str]:
    """The cells that went wrong in the run recorded at ``path``; None when it cannot be read (and why)."""
    if not path.exists():
        return None, f"no results file at {file_label(path)}"
    try:
        last = load_results(path)
    except EvalrunError as exc:
        return None, f"its results file cannot be read ({exc})"
    wrong = {r.name for r in last.evals if r.status.is_failure}
    if last.baseline is not None:
        wrong |= {c.eval for c in last.baseline.regressions}
    return wrong, file_label(path)


def select_last_failed(plan: Plan, tier: str, path: Path) -> LastFailedSelection:
    """Keep the planned evals of ``tier`` that went wrong last time (``path``: its results); all of them when none did."""
    names, source = last_failed_names(path)
    if names is None:
        return LastFailedSelection(plan, f"--last-failed: {source}; running every selected eval of {tier}")
    kept = [p for p in plan.evals if p.name in names]
    if not kept:
        return LastFailedSelection(
            plan, f"--last-failed: nothing failed or regressed in the last {tier} run ({source}); "
            f"running every selected eval of {tier}"
        )
    left = [p.name for p in plan.evals if p.name not in names]
    narrowed = replace(
        plan,
        evals=kept,
        filtered_out=[*plan.filtered_out, *left],
        filters={**plan.filters, "last_failed": [source]},
    )
    shown = ", ".join(p.name for p in kept)
    return LastFailedSelection(
        narrowed, f"--last-failed: {len(kept)} of {len(plan.evals)} evals failed or regressed in the last {tier} run "
        f"({source}): {shown}"
    )
