"""The run, top to bottom.

    select -> collect (preconditions, services and models, execute) -> judge (compare, decide) -> deliver
    (write, record, report)

``run`` strings the steps together in that order; each step is a module of
this package that takes records and returns a new record: ``select.py`` (the
plan and where the run writes), ``collect.py`` (probes, services, the model
proxy, the scorers: ``preconditions.py``, ``execute.py``, ``outcome.py``, kept
off the network by ``isolation.py``), ``judge`` here (the baseline compared,
then the exit code decided: ``evalrun.baseline``, ``evalrun.verdict``) and
``deliver.py`` (results, reports, history, HTML). Once the plan is chosen the
run's context (``context.py``: the session, the manifest that runs, the tier,
its scrubbed environment) is built once and goes through every step to the
history and the HTML page. ``evalrun merge`` and ``evalrun baseline`` reuse
``judge``, ``deliver`` and ``collect``, so a merged or re-judged run is decided
exactly as a single run is; ``evalrun bites`` collects each bite the same way.
"""

from __future__ import annotations

from dataclasses import replace

from evalrun.baseline import Baseline, baseline_path, compare_tier, load_baseline, update_command
from evalrun.errors import ExitCode
from evalrun.manifest import load_manifest
from evalrun.plan import Plan, make_plan
from evalrun.reports_out.run_notes import from_clean_checkout
from evalrun.results import RunResults
from evalrun.run.collect import collect
from evalrun.run.context import RunContext
from evalrun.run.deliver import deliver, interrupted_after_scorers, positional_warnings
from evalrun.run.requests import CollectOptions, Outputs, RunRequest
from evalrun.run.select import plan_outputs, select
from evalrun.run.signals import sigterm_as_interrupt
from evalrun.session import Session
from evalrun.verdict import decide_exit_code


def run(request: RunRequest, session: Session) -> int:
    """Run one tier of the session's manifest and return its exit code."""
    if request.clean_checkout or request.worktree:
        return _run_in_clean_checkout(request, session)
    plan, _ = select(request, session)
    outputs = plan_outputs(session.manifest, request, plan)
    context = RunContext.build(session, request.tier)  # the one place the run's state is worked out
    return _run_plan(context, plan, request, outputs)


def _run_plan(context: RunContext, plan: Plan, request: RunRequest, outputs: Outputs) -> int:
    baseline = load_baseline(baseline_path(context.manifest, context.tier))  # a bad baseline is exit 2, before any scorer
    collected: RunResults | None = None
    try:
        # From here to the end, SIGTERM is Ctrl-C: 130 at any phase, and the results file says so.
        with sigterm_as_interrupt():
            collected = collect(context, plan, CollectOptions.of(request), context.console, baseline)
            judged = judge(collected, context, baseline, strict=request.strict_baseline)
            positional_warnings(judged, baseline, context.console)
            return deliver(judged, context, outputs, source="run", verbose=request.verbose)
    except KeyboardInterrupt:
        if collected is None:
            raise
        interrupted_after_scorers(collected, outputs, context)  # while judging: the results unjudged, kept
        return int(ExitCode.INTERRUPTED)


def judge(results: RunResults, context: RunContext, baseline: Baseline | None, *, strict: bool) -> RunResults:
    """Compare with the tier's baseline, then decide the exit code: a new, judged record.

    Hints name the manifest the user ran (``context.shown``), not a clean copy's export.
    """
    manifest = context.manifest
    if any(spec.anchors is not None for spec in manifest.evals):  # else calibrate changes nothing: not loaded
        from evalrun.calibration import calibrate

        results = calibrate(results, manifest)  # judges measured on their anchors: an eval may fail here
    comparison = compare_tier(
        manifest,
        results,
        baseline,
        strict=strict,
        update_command=update_command(results.tier, context.shown.path),
    )
    code = decide_exit_code(results.evals, comparison, results.interrupted)
    return replace(results, baseline=comparison, exit_code=int(code))


def _run_in_clean_checkout(request: RunRequest, session: Session) -> int:
    """Run from ``git archive HEAD`` (plus uncommitted changes with --worktree) in a temporary folder.

    The selection is made in the real repository (the export has no .git); results
    and reports are written where an ordinary run would write them.
    """
    from evalrun.selection.checkout import clean_checkout

    console = session.console
    plan, _ = select(request, session)
    outputs = plan_outputs(session.manifest, request, plan)
    keep = {p.name for p in plan.evals}
    with clean_checkout(request.manifest_path, request.worktree) as exported:
        console.note(from_clean_checkout(exported.parent, request.worktree))
        inner = load_manifest(exported)
        full = make_plan(inner, request.tier, [], [])
        narrowed = Plan(
            evals=[p for p in full.evals if p.name in keep],
            filtered_out=plan.filtered_out,
            filters={**plan.filters, "clean_checkout": ["worktree" if request.worktree else "HEAD"]},
            rule_skips={},
            durations=plan.durations,
        )
        inner_request = request._replace(manifest_path=exported, clean_checkout=False, worktree=False)
        context = RunContext.build(session, request.tier, inner)  # the export's manifest, services and logs
        return _run_plan(context, narrowed, inner_request, outputs)
