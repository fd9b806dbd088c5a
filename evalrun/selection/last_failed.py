"""``--last-failed`` (``--lf``): only what went wrong in the tier's last run.

pytest's ``--lf``, read from the tier's results file: the evals that failed,
errored or timed out, and those whose baseline comparison found a regression.
When the last run had nothing wrong (or there is no readable results file),
every planned eval runs, as pytest does by default, and the note says why.
What it leaves out joins ``filtered_out`` (listed as not compared, and the run
is a filtered one in the history).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import EvalrunError, file_label
from evalrun.plan import Plan
from evalrun.results import load_results


@dataclass(frozen=True)
class LastFailedSelection:
    """What ``--last-failed`` kept (``reports_out.run_notes.last_failed_note`` says it in one line)."""

    plan: Plan
    tier: str
    source: str  # the results file read, or why none could be read
    readable: bool  # False: no last run to read; every selected eval runs
    kept: list[str]  # the evals that went wrong last time and run now; empty: none did, every selected eval runs
    planned: int  # how many evals the filters selected before --last-failed


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
        return LastFailedSelection(plan, tier, source, False, [], len(plan.evals))
    kept = [p for p in plan.evals if p.name in names]
    if not kept:
        return LastFailedSelection(plan, tier, source, True, [], len(plan.evals))
    left = [p.name for p in plan.evals if p.name not in names]
    narrowed = plan._replace(
        evals=kept,
        filtered_out=[*plan.filtered_out, *left],
        filters={**plan.filters, "last_failed": [source]},
    )
    return LastFailedSelection(narrowed, tier, source, True, [p.name for p in kept], len(plan.evals))
