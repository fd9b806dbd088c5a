"""The run, top to bottom.

    load -> select -> preconditions -> services and models -> execute
         -> compare -> decide -> write -> report

``run`` strings the steps together in that order; each step is a function of
this module that takes records and returns a new record, and each delegates
to the module of its own name (``manifest``, ``plan``, ``probes``, ``services``,
``models``, ``execute``, ``baseline``, ``verdict``, ``results``,
``reports_out``). Once the plan is chosen, the run's context
(``evalrun.context.RunContext``: the manifest, the tier, the environment, the
secrets and the scrubbed environment, the ``.evalrun/`` workspace) is built
once and each step gets the parts it uses. ``evalrun merge`` and ``evalrun baseline diff`` reuse the
same ``judge`` (compare, then decide), ``write`` and ``report`` steps, so a
merged or re-judged run is decided exactly as a single run is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from evalrun import __version__
from evalrun.atomic import writes_in_place
from evalrun.calibration import calibrate
from evalrun.context import RunContext
from evalrun.session import Session
from evalrun.baseline import Baseline, baseline_path, compare_tier, load_baseline, update_command
from evalrun.errors import ExitCode, OutputError, ReportError, UsageError
from evalrun.execute import ExecuteRequest, Preparation, execute, scorer_base_env
from evalrun.manifest import Manifest, load_manifest
from evalrun.models.cost import run_cost
from evalrun.models.policy import BUDGET_MESSAGE, ModelCalls
from evalrun.models.scorer_env import with_pythonpath
from evalrun.plan import Plan, PlannedEval, make_plan
from evalrun.preconditions import Preconditions, check_tier_guard, probe_evals, ready_check, skips_are_failures
from evalrun.repeats import (
    EARLY_STOP_MESSAGE, RepeatTracker, aggregate_all, expand, interrupted_result, plan_settings, repeat_as_recorded,
)
from evalrun.reports_out.describe import describe_connection_hint, describe_filters, describe_recorded_nothing, describe_repeated_as_recorded
from evalrun.reports_out.summary import interrupted_report, report
from evalrun.reports_out.terminal import Console
from evalrun.results import EvalResult, RunResults, Status, new_run_id, redact_result, write_results
from evalrun.leftovers import reap_leftovers
from evalrun.workspace import check_writable, workspace_of
from evalrun.services.manager import ServiceManager
from evalrun.verdict import decide_exit_code

if TYPE_CHECKING:
    from evalrun.selection.timings import Timings
    from evalrun.history.location import HistoryLocation
    from evalrun.selection.changed import ChangedSelection
    from evalrun.sandbox import Sandbox


@dataclass(frozen=True)
class RunRequest:
    """What a run command asks for: the tier, the filters, and where outputs go."""

    manifest_path: Path
    tier: str
    evals: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    jobs: int = 0
    json_path: Path | None = None
    strict_baseline: bool = False
    no_skips: bool = False
    junit_path: Path | None = None
    markdown_path: Path | None = None
    changed_since: str | None = None
    shard: str | None = None
    clean_checkout: bool = False
    worktree: bool = False
    record: bool = False  # t3: write the model answers as replay fixtures
    html_path: Path | None = None  # also the HTML report: this run and the history's last runs
    repeat: int | None = None  # --repeat N: every planned eval runs N times (evalrun.repeats)
    experiments: list[str] = field(default_factory=list)  # --experiment NAME: only these columns
    verbose: bool = False  # -v: the output tail of every failing eval after the summary
    last_failed: bool = False  # --last-failed: only what failed, errored or regressed in the tier's last run


@dataclass(frozen=True)
class CollectOptions:
    """What collecting a plan takes of the request: how many at once, how often, what is recorded, what a skip is."""

    jobs: int = 0  # 0: one per CPU
    repeat: int | None = None  # --repeat N
    record: bool = False  # t3 --record
    no_skips: bool = False  # --no-skips: a skip is a failure

    @classmethod
    def of(cls, request: RunRequest) -> CollectOptions:
        return cls(jobs=request.jobs, repeat=request.repeat, record=request.record, no_skips=request.no_skips)


@dataclass(frozen=True)
class Outputs:
    """Where a run writes: the results file, and the reports asked for."""

    results: Path
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None


# --------------------------------------------------------------------------- the run


def run(request: RunRequest, session: Session) -> int:
    """Run one tier of the session's manifest and return its exit code."""
    if request.clean_checkout or request.worktree:
        return _run_in_clean_checkout(request, session)
    console, environ, manifest = session.console, session.environ, session.manifest
    plan, _ = select(manifest, request, console, environ, locate=session.locate_history)
    outputs = plan_outputs(manifest, request, plan)
    context = RunContext.build(session, request.tier)  # the one place the run's state is worked out
    return _run_plan(context, plan, request, outputs, console, shown=manifest)


def _run_plan(
    context: RunContext, plan: Plan, request: RunRequest, outputs: Outputs, console: Console, *, shown: Manifest
) -> int:
    manifest = context.manifest
    baseline = load_baseline(baseline_path(manifest, context.tier))  # a bad baseline is exit 2, before any scorer
    collected: RunResults | None = None
    try:
        # From here to the end, SIGTERM is Ctrl-C: 130 at any phase, and the results file says so.
        with _sigterm_as_interrupt():
            collected = collect(context, plan, CollectOptions.of(request), console, baseline)
            judged = judge(collected, manifest, baseline, strict=request.strict_baseline, shown=shown)
            positional_warnings(judged, baseline, console)
            return deliver(judged, shown, outputs, console, context.environ, secrets=context.secrets.values,
                           source="run", verbose=request.verbose, locate=context.session.locate_history)
    except KeyboardInterrupt:
        if collected is None:
            raise
        _interrupted_after_scorers(collected, outputs, console)  # while judging: the results unjudged, kept
        return int(ExitCode.INTERRUPTED)


def deliver(
    judged: RunResults, manifest: Manifest, outputs: Outputs, console: Console, environ: Mapping[str, str],
    *, secrets: Iterable[str], source: str, verbose: bool = False, locate: Callable[[], HistoryLocation | None] | None = None,
) -> int:
    """Write, record, report (and the HTML page); the exit code. Interrupted here: 130, and the results file says so.

    ``secrets``: the run's (``evalrun.secrets.known_secrets``), scrubbed from what the history and the page keep.
    ``verbose``: the report prints the output tail of every failing eval (``-v``).
    ``locate``: the session's ``locate_history``: the history is located once an invocation.
    """
    try:
        with _sigterm_as_interrupt():
            write(judged, outputs, console, environ)
            history_warning = record(judged, manifest, console, environ, secrets=secrets, source=source, locate=locate)
            report(judged, console, outputs, verbose=verbose)
            write_html(judged, manifest, outputs, console, environ, history_warning, secrets=secrets, locate=locate)
    except KeyboardInterrupt:
        _interrupted_after_scorers(judged, outputs, console)
        return int(ExitCode.INTERRUPTED)
    return int(judged.exit_code or 0)


def keep_and_record(results: RunResults, results_path: Path, manifest: Manifest, console: Console,
                    environ: Mapping[str, str], *, secrets: Iterable[str], source: str, locate: Callable[[], HistoryLocation | None] | None = None) -> None:
    """The results file, then the history; interrupted here, the file is marked so and KeyboardInterrupt goes on."""
    try:
        with _sigterm_as_interrupt():
            write_results(results, results_path)
            record(results, manifest, console, environ, secrets=secrets, source=source, locate=locate)
    except KeyboardInterrupt:
        stopped = results.model_copy(update={"interrupted": True, "exit_code": int(ExitCode.INTERRUPTED)})
        with _sigterm_ignored(), contextlib.suppress(OSError):
            write_results(stopped, results_path)
        console.warn(f"interrupted after the scorers finished: {results_path} is marked interrupted")
        raise


def _interrupted_after_scorers(judged: RunResults, outputs: Outputs, console: Console) -> None:
    """Interrupted once every scorer was done (writing, the history, reports): the results file says 130 too."""
    console.stop_progress()
    stopped = judged.model_copy(update={"interrupted": True, "exit_code": int(ExitCode.INTERRUPTED)})
    with _sigterm_ignored():  # one more signal must not leave the file half-decided
        try:
            write_results(stopped, outputs.results)
        except OSError as exc:
            console.warn(f"--json {outputs.results}: cannot write ({exc.strerror or exc})")
    interrupted_report(judged.tier, outputs.results, console)


# --------------------------------------------------------------------------- load, select


def load(manifest_path: Path) -> Manifest:
    """The manifest, validated whole (probes and services included): exit 2 on a mistake."""
    return load_manifest(manifest_path)


def select(
    manifest: Manifest, request: RunRequest, console: Console | None = None, environ: Mapping[str, str] | None = None,
    locate: Callable[[], HistoryLocation | None] | None = None,
) -> tuple[Plan, ChangedSelection | None]:
    """The tier, the filters, then ``--changed-since``, ``--last-failed``, then ``--shard``: every shard drops the same evals.

    ``environ``: where ``--shard auto`` reads the CI's variables and the history is located (evalrun's own).
    """
    # Only runs that ask for them pay for git and the shard split: their modules are imported where used.
    environ = environ if environ is not None else {}
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

        package_dir = Path(__file__).resolve().parent  # a change to evalrun itself selects everything
        changed = select_changed(plan, manifest, request.changed_since, package_dir)
        plan = changed.plan
    if request.last_failed:
        from evalrun.selection.last_failed import select_last_failed

        last = select_last_failed(plan, request.tier, request.json_path or default_results_path(manifest, request.tier))
        plan = last.plan
        if console is not None:
            console.note(last.note)
    timings = _timings(manifest, request, plan, environ, shard is not None, locate)
    if timings is None:  # nothing they would change (never under --shard): no durations
        return replace(plan, durations={}), changed
    if shard is not None:
        from evalrun.reports_out.shards import shard_note
        from evalrun.selection.shards import select_shard

        # Balanced by each eval's recent durations (the history, else the last whole run's results file),
        # which every shard reads alike; the header says which.
        plan = select_shard(plan, shard, timings.durations or None)
        if console is not None:
            console.note(shard_note(shard, timings))
    if timings.problem and console is not None:
        from evalrun.reports_out.shards import history_unread

        console.warn(history_unread(timings.problem))
    # The evals start longest first (-j N finishes sooner); results stay in plan order.
    plan = replace(plan, durations=timings.only([p.name for p in plan.evals]).durations)
    return plan, changed


def _timings(manifest: Manifest, request: RunRequest, plan: Plan, environ: Mapping[str, str], sharded: bool,
             locate: Callable[[], HistoryLocation | None] | None = None) -> Timings | None:
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


# --------------------------------------------------------------------------- preconditions, services, execute


def collect(
    context: RunContext, plan: Plan, options: CollectOptions, console: Console, baseline: Baseline | None = None
) -> RunResults:
    """Guard, probe, start services and the model proxy, execute; results not yet compared or judged.

    ``baseline``: an eval whose baseline holds pass rates repeats as they were recorded.
    t1 and t2 do all that inside a loopback-only network namespace where the
    system allows it (evalrun.isolation); elsewhere on Linux their scorers start
    under a seccomp filter and Landlock rules (evalrun.sandbox). The header line
    says which, and so does the results' ``network``.
    """
    from evalrun.isolation import fallback_for, header, isolated, network_policy, not_isolated, refuse, run_isolated

    tier = context.tier
    policy = network_policy(context.manifest, tier)
    if not policy.isolate:
        if tier not in ("t1", "t2"):
            return _collect(context, plan, options, console, baseline)
        network = not_isolated(policy.why_not)
        console.warn(header(network))
        return _explained(_collect(context, plan, options, console, baseline).model_copy(update={"network": network}),
                          context.manifest)
    network = isolated("namespace")
    entered, results, why = run_isolated(
        lambda: _collect(context, plan, options, console, baseline), lambda: console.note(header(network))
    )
    if not entered or results is None:
        mechanism, why_no_fallback = fallback_for(tier)
        if mechanism is None:
            reason = why or "unknown"
            if sys.platform.startswith("linux"):  # elsewhere the fallback is Linux only as the namespace is: said once
                reason = f"{reason}; and no fallback: {why_no_fallback}"
            if policy.required:
                raise refuse(policy, reason)
            network = not_isolated(reason)
            console.warn(header(network))
            return _explained(_collect(context, plan, options, console, baseline).model_copy(update={"network": network}),
                              context.manifest)
        network = isolated(mechanism)
        console.note(header(network))
        results = _collect(context, plan, options, console, baseline, sandboxed=True)
    return _explained(results.model_copy(update={"network": network}), context.manifest)


def _explained(results: RunResults, manifest: Manifest) -> RunResults:
    """t1/t2 evals that failed on a connection say the likely fix: model = true first, network = "host" last,
    and how the run was isolated (``results.network``)."""
    from urllib.parse import urlsplit

    from evalrun.isolation import explain_connections
    from evalrun.models.scorer_env import T1_MODEL_URL

    if results.tier not in ("t1", "t2"):
        return results
    network = results.network
    mechanism = network.mechanism if network is not None and network.isolated else None
    specs = {s.name: s for s in manifest.evals}
    recorders = {s.fixtures_for: (s.name, manifest.uses_model(s)) for s in manifest.evals
                 if s.tier == "t3" and s.fixtures_for}

    def hint(result: EvalResult) -> str | None:
        spec = specs.get(result.name.split("[", 1)[0])
        if spec is None:
            return None
        return describe_connection_hint(result.tier, spec.name, uses_model=manifest.uses_model(spec),
                                        recorder=recorders.get(spec.name), mechanism=mechanism,
                                        no_model_at=urlsplit(T1_MODEL_URL).netloc)

    # Under the fallback a refusal is the network's too (seccomp and Landlock say "permission denied").
    return results.model_copy(update={"evals": explain_connections(results.evals, hint,
                                                                   refused=mechanism not in (None, "namespace"))})


def _collect(
    context: RunContext, plan: Plan, options: CollectOptions, console: Console, baseline: Baseline | None = None,
    sandboxed: bool = False,
) -> RunResults:
    """Ctrl-C or SIGTERM at any phase ends here as results that mark every planned
    eval either done or interrupted. ``sandboxed``: the scorers start under the isolation fallback.
    """
    manifest, tier = context.manifest, context.tier
    started = _now()
    # Probes obey the tier's key rule as scorers do: no provider key in t1/t2.
    probe_env = context.probe_env()
    with _sigterm_as_interrupt():
        check_tier_guard(manifest, tier, probe_env, context.secrets.values)  # unmet: exit 2 before any scorer starts
        for line in reap_leftovers(context.workspace.services):
            console.warn(line)
        try:
            pre = probe_evals(manifest, plan.evals, probe_env, skips_are_failures(manifest, tier, options.no_skips),
                              context.secrets.values)
            if not plan.evals:
                console.warn(f"nothing selected to run in {tier} ({describe_filters(plan)})")
            results, interrupted = _start_and_execute(context, plan, options, pre, console, baseline, sandboxed)
        except KeyboardInterrupt:
            console.stop_progress()
            results, interrupted = [interrupted_result(p, tier) for p in plan.evals], True
    return RunResults(
        evalrun_version=__version__,
        tier=tier,
        manifest=str(manifest.path),
        started_at=started,
        run_id=new_run_id(tier, started),
        finished_at=_now(),
        interrupted=interrupted,
        selection={
            **plan.filters,
            "filtered_out": plan.filtered_out,
            **({"skipped_by_rule": dict(plan.rule_skips)} if plan.rule_skips else {}),
        },
        evals=results,
        cost=run_cost(r.models for r in results),
    )


def _start_and_execute(
    context: RunContext,
    plan: Plan,
    options: CollectOptions,
    pre: Preconditions,
    console: Console,
    baseline: Baseline | None = None,
    sandboxed: bool = False,
) -> tuple[list[EvalResult], bool]:
    """Services and the model proxy up, every planned eval executed, everything stopped again.

    ``sandboxed``: every scorer starts from a thread under the isolation fallback (``evalrun.sandbox``), whose
    Landlock rules in t2 let it connect to the replay proxy and the services started here, and nothing else."""
    manifest, tier, secrets = context.manifest, context.tier, context.secrets
    planned = plan.evals
    # Repeats: every planned eval becomes its runs; they are folded back into one result per eval below.
    settings, repeat_notes = repeat_as_recorded(plan_settings(manifest, planned, options.repeat), baseline,
                                                options.repeat)
    for name, count in repeat_notes.items():
        console.note(describe_repeated_as_recorded(name, count))
    runs = expand(planned, settings)
    tracker = RepeatTracker(planned, settings, tier, on_eval_done=console.eval_finished)
    will_run = [p for p in runs if pre.for_eval(p.name).runs]
    models = ModelCalls(manifest, tier, will_run, context.environ, options.record, secrets=secrets.keys)
    services = ServiceManager(
        manifest.services,
        logs_dir=context.workspace.logs,
        state_dir=context.workspace.services,
        environ=context.scrubbed_env,  # services obey the tier's key rule as scorers do
        ready_check=ready_check(manifest),
        secrets=secrets.values,
    )

    def finalize(planned: PlannedEval, result: EvalResult) -> EvalResult:
        # Redacted before anything is written or shown: results, JUnit, Markdown, baselines, history;
        # a repeated eval's runs are folded into one result by the tracker.
        return tracker.record(planned, redact_result(models.finalize(planned, result), secrets.values))

    shown_started: set[str] = set()

    def started(name: str) -> None:  # a repeated eval shows as running once, from its first run
        if name not in shown_started:
            shown_started.add(name)
            console.eval_started(name)

    def prepare(planned: PlannedEval) -> Preparation:
        if tracker.stopped(planned):
            return Preparation(skip=EARLY_STOP_MESSAGE, status=Status.SKIPPED)
        decision = pre.for_eval(planned.name)
        if decision.fail or decision.skip:
            return Preparation(fail=decision.fail, skip=decision.skip)
        if models.budget_exhausted(planned):
            return Preparation(skip=BUDGET_MESSAGE, status=Status.BUDGET)
        failure = services.failure_for(planned.spec.services)
        if failure:
            return Preparation(fail=failure)
        return Preparation(env={**services.env_for(planned.spec.services), **models.env_for(planned)})

    try:
        with services, models:
            if models.mode:
                console.note(f"model calls: {models.mode} through {models.proxy.url}")
                for line in models.upstream_lines():
                    console.note(line)
            if sandboxed:  # services start under the fallback too: TCP to the proxy and each other only
                services.restrict(tier, _proxy_ports(models))
            for name in sorted({s for p in will_run for s in p.spec.services}):
                console.note(f"starting service {name}")
                state = services.start(name)
                if not state.ok:
                    console.error(state.failure or f"service {name} failed")
            sandbox = _open_sandbox(tier, services, models) if sandboxed else None
            console.start_progress(len(planned), tier, calls=models.calls_so_far if models.proxy else None)
            try:
                outcome = execute(
                    ExecuteRequest(
                        evals=runs,
                        order=_longest_first(runs, plan.durations),
                        tier=tier,
                        jobs=options.jobs or default_jobs(),
                        base_env=with_pythonpath(scorer_base_env(context.scrubbed_env), context.python_paths),
                        prepare=prepare,
                        finalize=finalize,
                        on_start=started,
                        # A repeated eval is shown once, by the tracker, when its last run is in.
                        on_finish=lambda r: None if tracker.repeats(r.name) else console.eval_finished(r),
                        secrets=secrets.values,
                        pidfile_dir=context.workspace.services,  # scorers have pidfiles like services, swept alike
                        sandbox=sandbox,
                    )
                )
            finally:
                if sandbox is not None:
                    sandbox.close()
            console.stop_progress()
            for line in services.stop_all():
                console.note(line)
    finally:
        console.stop_progress()
    results = aggregate_all(planned, runs, outcome.results, settings, tier)
    if options.record and not outcome.interrupted:
        for line in _recorded_nothing(manifest, planned, results):
            console.warn(line)
    return results, outcome.interrupted


def _recorded_nothing(manifest: Manifest, planned: list[PlannedEval], results: list[EvalResult]) -> list[str]:
    """``--record``: an eval that ran and left no fixture says so, and why (it is easily missed: it passes)."""
    specs = {p.name: p.spec for p in planned}
    lines = []
    for result in results:
        spec = specs.get(result.name)
        if spec is None or result.status in (Status.SKIPPED, Status.INTERRUPTED, Status.BUDGET):
            continue
        uses_model = manifest.uses_model(spec)
        if uses_model and (result.models or {}).get("calls"):
            continue
        lines.append(describe_recorded_nothing(result.name, uses_model, spec.fixtures_for))
    return lines


def _proxy_ports(models: ModelCalls) -> list[int]:
    """The replay proxy's port, if this run has one."""
    from urllib.parse import urlsplit

    port = urlsplit(models.proxy.url).port if models.proxy is not None else None
    return [port] if port is not None else []


def _open_sandbox(tier: str, services: ServiceManager, models: ModelCalls) -> Sandbox:
    """The restricted thread the scorers start from: in t1 no IP socket; in t2 TCP to the proxy and services only."""
    from evalrun.sandbox import Rules, Sandbox

    ports = services.tcp_ports() + _proxy_ports(models)
    sandbox, why = Sandbox.open(Rules(tier, None if tier == "t1" else tuple(ports)))
    if sandbox is None:  # it worked a moment ago (isolation.fallback_for): never run unrestricted in silence
        raise RuntimeError(f"the isolation fallback could not restrict the scorers' thread: {why}")
    return sandbox


def _longest_first(runs: list[PlannedEval], durations: Mapping[str, float]) -> list[int] | None:
    """The order to start ``runs`` in (``evalrun.selection.timings``); None without durations: plan order."""
    if not durations:
        return None
    from evalrun.selection.timings import longest_first

    return longest_first([r.name for r in runs], durations)


def default_jobs() -> int:
    return os.cpu_count() or 1


# --------------------------------------------------------------------------- compare, decide


def judge(
    results: RunResults,
    manifest: Manifest,
    baseline: Baseline | None,
    *,
    strict: bool,
    shown: Manifest | None = None,
) -> RunResults:
    """Compare with the tier's baseline, then decide the exit code: a new, judged record.

    ``shown`` is the manifest named in hints (the real one, not a temporary export).
    """
    results = calibrate(results, manifest)  # judges measured on their anchors: an eval may fail here
    comparison = compare_tier(
        manifest,
        results,
        baseline,
        strict=strict,
        update_command=update_command(results.tier, (shown or manifest).path),
    )
    code = decide_exit_code(results.evals, comparison, results.interrupted)
    return results.model_copy(update={"baseline": comparison, "exit_code": int(code)})


# --------------------------------------------------------------------------- write, report


def write(results: RunResults, outputs: Outputs, console: Console, environ: Mapping[str, str]) -> None:
    """The results file, then JUnit XML, a Markdown summary and GitHub's step summary and annotations."""
    _write_output(lambda: write_results(results, outputs.results), "--json", outputs.results)
    if outputs.junit is not None:
        from evalrun.reports_out.junit import write_junit

        _write_output(lambda: write_junit(results, outputs.junit), "--junit", outputs.junit)
    if outputs.markdown is not None:
        from evalrun.reports_out.markdown import write_markdown

        _write_output(lambda: write_markdown(results, outputs.markdown), "--markdown", outputs.markdown)
    if environ.get("GITHUB_STEP_SUMMARY"):
        from evalrun.reports_out.github import append_github_step_summary

        try:
            append_github_step_summary(results, environ)
        except ReportError as exc:  # a summary we cannot write must not change the verdict
            console.warn(f"GITHUB_STEP_SUMMARY: {exc}")
    if environ.get("GITHUB_ACTIONS") == "true":
        from evalrun.reports_out.github import github_annotations

        for line in github_annotations(results):
            console.command(line)


def _write_output(write_one: Callable[[], None], flag: str, path: Path) -> None:
    """Write one output; if that fails, the last run's file there is removed: it must never look current."""
    try:
        write_one()
    except BaseException as exc:
        if not writes_in_place(path):
            with contextlib.suppress(OSError):
                os.unlink(path)
        if isinstance(exc, OSError):
            raise OutputError(f"{flag} {path}: cannot write ({exc.strerror or exc}); choose a writable path") from None
        raise


def record(
    results: RunResults, manifest: Manifest, console: Console, environ: Mapping[str, str], source: str,
    *, secrets: Iterable[str], locate: Callable[[], HistoryLocation | None] | None = None,
) -> str | None:
    """Append the run to the history store; a history that cannot be written is a warning (returned too), never a verdict."""
    from evalrun.history import record_run

    if warning := record_run(manifest, results, environ, source=source, secrets=secrets, locate=locate):
        console.warn(warning)
    return warning


def write_html(
    results: RunResults, manifest: Manifest, outputs: Outputs, console: Console, environ: Mapping[str, str],
    history_warning: str | None = None, *, secrets: Iterable[str], locate: Callable[[], HistoryLocation | None] | None = None,
) -> None:
    """The HTML report of this run and the history's last runs, when ``--html`` asked for it.

    ``history_warning``: this run could not be recorded; the history is not waited for a second time.
    """
    if outputs.html is None:
        return
    from evalrun.reports_out.html import write_html_after_run

    if warning := write_html_after_run(manifest, results, outputs.html, environ, console, history_warning, secrets=secrets,
                                       locate=locate):
        console.warn(warning)


def positional_warnings(results: RunResults, baseline: Baseline | None, console: Console) -> None:
    """Warn of each eval whose checks are named by position, on every run: the baseline cannot see a case
    replaced at the same position, so a run that passes is no evidence; a vanished position is named too."""
    from evalrun.reports_in.positional import find_positional
    from evalrun.reports_out.positional import positional_warning

    for result in results.evals:
        known = list((baseline or {}).get(result.name, {}))
        names = [c.name for c in result.checks]
        if names and (found := find_positional(names)) is not None:
            was = find_positional(known)
            current = set(names)
            vanished = [n for n in known if n not in current] if was is not None and was.tool == found.tool else []
            console.warn(positional_warning(result.name, found, vanished))


# --------------------------------------------------------------------------- clean checkout


def _run_in_clean_checkout(request: RunRequest, session: Session) -> int:
    """Run from ``git archive HEAD`` (plus uncommitted changes with --worktree) in a temporary folder.

    The selection is made in the real repository (the export has no .git); results
    and reports are written where an ordinary run would write them.
    """
    from evalrun.selection.checkout import clean_checkout

    console, environ, manifest = session.console, session.environ, session.manifest
    plan, _ = select(manifest, request, console, environ, locate=session.locate_history)
    outputs = plan_outputs(manifest, request, plan)
    keep = {p.name for p in plan.evals}
    with clean_checkout(request.manifest_path, request.worktree) as exported:
        console.note(
            f"running from a clean checkout of HEAD{' plus uncommitted changes' if request.worktree else ''}: "
            f"{exported.parent}"
        )
        inner = load(exported)
        full = make_plan(inner, request.tier, [], [])
        narrowed = Plan(
            evals=[p for p in full.evals if p.name in keep],
            filtered_out=plan.filtered_out,
            filters={**plan.filters, "clean_checkout": ["worktree" if request.worktree else "HEAD"]},
            durations=plan.durations,
        )
        inner_request = replace(request, manifest_path=exported, clean_checkout=False, worktree=False)
        context = RunContext.build(session, request.tier, inner)  # the export's manifest, services and logs
        return _run_plan(context, narrowed, inner_request, outputs, console, shown=manifest)


# --------------------------------------------------------------------------- helpers


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def _sigterm_ignored() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """A CI runner's cancel (SIGTERM) stops the run the way Ctrl-C does."""

    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, _raise)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
