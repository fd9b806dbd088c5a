"""Collect: preconditions, services and the model proxy, then every planned eval executed; results not yet judged.

``collect`` is the run's middle: the tier guard and probes (``preconditions``),
leftovers of a SIGKILLed run reaped, services and the replay proxy started
(``evalrun.services``, ``evalrun.models``), the scorers run (``execute``), a
repeated eval's runs folded (``evalrun.repeats``). t1 and t2 do all of it
kept off the network (``isolation``) where the system allows it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from evalrun import __version__
from evalrun.baseline import Baseline
from evalrun.leftovers import reap_leftovers
from evalrun.manifest import Manifest
from evalrun.models.cost import run_cost
from evalrun.run.model_calls import BUDGET_MESSAGE, ModelCalls
from evalrun.models.scorer_env import with_pythonpath
from evalrun.plan import Plan, PlannedEval
from evalrun.repeats import (
    EARLY_STOP_MESSAGE, RepeatTracker, aggregate_all, expand, interrupted_result, plan_settings, repeat_as_recorded,
)
from evalrun.reports_out.describe import describe_connection_hint, describe_recorded_nothing, describe_repeated_as_recorded
from evalrun.reports_out.run_notes import (
    leftover_line, model_calls_through, nothing_selected, starting_service, stopped_service_line, upstream_lines,
)
from evalrun.reports_out.terminal import Console
from evalrun.results import EvalResult, RunResults, Status, new_run_id, redact_result
from evalrun.run.context import RunContext
from evalrun.run.execute import ExecuteRequest, Preparation, execute, scorer_base_env
from evalrun.run.preconditions import Preconditions, check_tier_guard, probe_evals, ready_check, skips_are_failures
from evalrun.run.requests import CollectOptions
from evalrun.run.signals import sigterm_as_interrupt
from evalrun.services.manager import ServiceManager

if TYPE_CHECKING:
    from evalrun.sandbox import Sandbox


def collect(
    context: RunContext, plan: Plan, options: CollectOptions, console: Console, baseline: Baseline | None = None
) -> RunResults:
    """Guard, probe, start services and the model proxy, execute; results not yet compared or judged.

    ``baseline``: an eval whose baseline holds pass rates repeats as they were recorded.
    t1 and t2 do all that inside a loopback-only network namespace where the
    system allows it (evalrun.run.isolation); elsewhere on Linux their scorers start
    under a seccomp filter and Landlock rules (evalrun.sandbox). The header line
    says which, and so does the results' ``network``.
    """
    from evalrun.run.isolation import fallback_for, header, isolated, network_policy, not_isolated, refuse, run_isolated

    tier = context.tier
    policy = network_policy(context.manifest, tier)
    if not policy.isolate:
        if tier not in ("t1", "t2"):
            return _collect(context, plan, options, console, baseline)
        network = not_isolated(policy.why_not)
        console.warn(header(network))
        return _explained(replace(_collect(context, plan, options, console, baseline), network=network),
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
            return _explained(replace(_collect(context, plan, options, console, baseline), network=network),
                              context.manifest)
        network = isolated(mechanism)
        console.note(header(network))
        results = _collect(context, plan, options, console, baseline, sandboxed=True)
    return _explained(replace(results, network=network), context.manifest)


def _explained(results: RunResults, manifest: Manifest) -> RunResults:
    """t1/t2 evals that failed on a connection say the likely fix: model = true first, network = "host" last,
    and how the run was isolated (``results.network``)."""
    from urllib.parse import urlsplit

    from evalrun.run.isolation import explain_connections
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
    return replace(results, evals=explain_connections(results.evals, hint,
                                                      refused=mechanism not in (None, "namespace")))


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
    with sigterm_as_interrupt():
        check_tier_guard(manifest, tier, probe_env, context.secrets.values)  # unmet: exit 2 before any scorer starts
        for leftover in reap_leftovers(context.workspace.services):
            console.warn(leftover_line(leftover))
        try:
            pre = probe_evals(manifest, plan.evals, probe_env, skips_are_failures(manifest, tier, options.no_skips),
                              context.secrets.values)
            if not plan.evals:
                console.warn(nothing_selected(tier, plan))
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
    models = ModelCalls(context, will_run, options.record)
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
                console.note(model_calls_through(models.mode, models.proxy.url))
                for line in upstream_lines(models.upstreams, models.own_upstreams()):
                    console.note(line)
            if sandboxed:  # services start under the fallback too: TCP to the proxy and each other only
                services.restrict(tier, _proxy_ports(models))
            for name in sorted({s for p in will_run for s in p.spec.services}):
                console.note(starting_service(name))
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
            for stopped in services.stop_all():
                console.note(stopped_service_line(stopped))
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
