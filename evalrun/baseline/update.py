"""What ``evalrun baseline --update`` records: the new counts, or a refusal when the run did not pass."""

from __future__ import annotations

from collections.abc import Mapping

from evalrun.baseline.format import sorted_baseline
from evalrun.baseline.rates import counts_of
from evalrun.errors import BaselineRefused
from evalrun.results import RunResults, Status
from evalrun.text import plural, quote

# A failing or unfinished state is never recorded as the baseline.
_REFUSED = (Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.INTERRUPTED)
# Not checked this run, but nothing is wrong with the eval: keep what was recorded.
_KEPT = (Status.SKIPPED, Status.BUDGET)


def update_baseline(
    old: Mapping[str, Mapping[str, int]] | None,
    results: RunResults,
    tier_eval_names: set[str],
    filtered: bool,
) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Compute the baseline that ``baseline --update`` records, with notes for the user.

    Refuses (``BaselineRefused``, exit 1) when the run failed or was
    interrupted: a failing state is never a baseline. A passed eval's table is
    rewritten to exactly its checks; a skipped or over-budget eval keeps its
    previous entry. Without filters, baselined evals gone from the manifest are
    dropped; with filters they are kept, since the run did not see the whole tier.
    """
    _refuse_failing_state(results)
    new: dict[str, dict[str, int]] = {name: dict(counts) for name, counts in (old or {}).items()}
    notes: list[str] = []
    for result in sorted(results.evals, key=lambda r: r.name):
        if result.status is Status.PASSED:
            new[result.name] = counts_of(result)  # with pass rates when the eval repeats
        elif result.status in _KEPT:
            reason = "skipped" if result.status is Status.SKIPPED else "stopped by the model budget"
            if result.name in new:
                notes.append(f"kept {quote(result.name)}: {reason}, not checked this run; previous entry unchanged")
            else:
                notes.append(f"not added {quote(result.name)}: {reason}, not checked this run")
    for name in sorted(new):
        if name in tier_eval_names:
            continue
        if filtered:
            notes.append(
                f"kept {quote(name)}: no longer in the manifest, but this run was filtered; "
                f"update without filters to drop it"
            )
        else:
            del new[name]
            notes.append(f"dropped {quote(name)}: no longer in the manifest")
    return sorted_baseline(new), notes


def _refuse_failing_state(results: RunResults) -> None:
    offending = sorted((r for r in results.evals if r.status in _REFUSED), key=lambda r: r.name)
    if offending:
        listed = ", ".join(f"{r.name} ({r.status.value})" for r in offending)
        raise BaselineRefused(
            f"baseline not updated: {plural(len(offending), 'eval')} did not pass: {listed}; "
            f"a failing state is never a baseline, fix them and rerun the tier"
        )
    if results.interrupted:
        raise BaselineRefused(
            "baseline not updated: the run was interrupted; rerun the tier to completion, then update"
        )
