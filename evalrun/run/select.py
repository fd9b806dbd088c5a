"""Select: the tier, the filters, ``--changed-since``, ``--last-failed``, ``--shard``; and where the run writes.

Every shard drops the same evals: the split is made after every other filter,
from durations every shard reads alike (``evalrun.selection.timings``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evalrun.errors import UsageError
from evalrun.manifest import Manifest
from evalrun.plan import Plan, make_plan
from evalrun.run.requests import Outputs, RunRequest
from evalrun.session import Session
from evalrun.workspace import check_writable, workspace_of

if TYPE_CHECKING:
    from evalrun.history.location import HistoryLocation
    from evalrun.selection.changed import ChangedSelection
    from evalrun.selection.timings import Timings


def select(request: RunRequest, session: Session) -> tuple[Plan, ChangedSelection | None]:
    """The tier, the filters, then ``--changed-since``, ``--last-failed``, then ``--shard``: every shard drops the same evals.

    The session's environment is where ``--shard auto`` reads the CI's variables; its history, located once,
    balances the shards.
    """
    # Only runs that ask for them pay for git and the shard split: their modules are imported where used.
    console, environ, manifest = session.console, session.environ, session.manifest
    shard = None
    if request.shard:
        from evalrun.selection.shards import parse_shard

        shard = parse_shard(request.shard, environ)  # a bad --shard is exit 2 before anything
    if request.last_failed and request.shard:
        raise UsageError("--last-failed with --shard: merge expects each shard's share of the whole tier; "
                         "run --last-failed on one machine, without --shard")
    if request.record and request.tier != "t3":
        raise UsageError(f"--record: only t3 makes live calls to record; {request.tier} never does")
    plan = make_plan(manifest, request.tier, request.evals, request.tags, request.experiments)
    changed = None
    if request.changed_since:
        from evalrun.selection.changed import select_changed

        package_dir = Path(__file__).resolve().parent.parent  # a change to evalrun itself selects everything
        changed = select_changed(plan, manifest, request.changed_since, package_dir)
        plan = changed.plan
    if request.last_failed:
        from evalrun.reports_out.run_notes import last_failed_note
        from evalrun.selection.last_failed import select_last_failed

        last = select_last_failed(plan, request.tier, request.json_path or default_results_path(manifest, request.tier))
        plan = last.plan
        console.note(last_failed_note(last))
    timings = _timings(manifest, request, plan, environ, shard is not None, session.locate_history)
    if timings is None:  # nothing they would change (never under --shard): no durations
        return plan._replace(durations={}), changed
    if shard is not None:
        from evalrun.reports_out.shards import shard_note
        from evalrun.selection.shards import select_shard

        # Balanced by each eval's recent durations (the history, else the last whole run's results file),
        # which every shard reads alike; the header says which.
        plan = select_shard(plan, shard, timings.durations or None)
        console.note(shard_note(shard, timings))
    if timings.problem:
        from evalrun.reports_out.shards import history_unread

        console.warn(history_unread(timings.problem))
    # The evals start longest first (-j N finishes sooner); results stay in plan order.
    plan = plan._replace(durations=timings.only([p.name for p in plan.evals]).durations)
    return plan, changed


def _timings(manifest: Manifest, request: RunRequest, plan: Plan, environ: Mapping[str, str], sharded: bool,
             locate: Callable[[], HistoryLocation | None]) -> Timings | None:
    """Each eval's recent duration, read only where it changes something: a split, or more evals than one worker;
    None elsewhere (and the module is not even imported)."""
    if not sharded and (request.jobs == 1 or len(plan.evals) < 2):
        return None
    from evalrun.selection.timings import load_timings  # local: only runs that can use durations pay for them

    return load_timings(manifest, request.tier, environ, default_results_path(manifest, request.tier), locate)


def default_results_path(manifest: Manifest, tier: str, shard: str | None = None) -> Path:
    """The tier's results file in the workspace (``evalrun.workspace``): ``.evalrun/results/<tier>.json``, or a shard's."""
    return workspace_of(manifest.root).results(tier, shard)


def plan_outputs(manifest: Manifest, request: RunRequest, plan: Plan) -> Outputs:
    """Where this run writes, each path checked before any scorer starts; a shard's own file is named by the
    shard the selection settled on (``--shard auto``: the CI's)."""
    shard = next(iter(plan.filters.get("shard", [])), None)
    results = request.json_path or default_results_path(manifest, request.tier, shard)
    return Outputs(
        results=check_writable(results, "--json"),
        junit=check_writable(request.junit_path, "--junit") if request.junit_path else None,
        markdown=check_writable(request.markdown_path, "--markdown") if request.markdown_path else None,
        html=check_writable(request.html_path, "--html") if request.html_path else None,
    )
