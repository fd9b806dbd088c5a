"""``evalrun t1|t2|t3`` and ``evalrun run --tier``: the whole pipeline, in order.

load_manifest -> make_plan -> (guard, probes) -> execute (run + parse each
scorer) -> compare_to_baseline -> decide_exit_code -> report. Each step lives in
a module of its own name; this function only strings them together.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from typing import TYPE_CHECKING

from evalrun import __version__
from evalrun.baseline import baseline_path, compare_tier, format_comparison, load_baseline
from evalrun.console import Console, closing_line
from evalrun.errors import ExitCode, ReportError, UsageError
from evalrun.execute import ExecuteRequest, Preparation, execute, scorer_base_env
from evalrun.history import record_run
from evalrun.manifest import Manifest, load_manifest
from evalrun.model_calls import BUDGET_MESSAGE, ModelCalls, describe_models
from evalrun.plan import Plan, PlannedEval, make_plan
from evalrun.preconditions import check_tier_guard, probe_evals, ready_check, skips_are_failures
from evalrun.probes import validate_probes
from evalrun.results import EvalResult, RunResults, Status, write_results
from evalrun.services import ServiceManager, parse_services, reap_leftovers
from evalrun.verdict import VERDICT_WORDS, decide_exit_code

if TYPE_CHECKING:
    from evalrun.selection import ChangedSelection


@dataclass(frozen=True)
class RunOptions:
    manifest_path: Path
    tier: str
    evals: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    jobs: int = 0
    json_path: Path | None = None
    strict_baseline: bool = False
    no_skips: bool = False
    compare: bool = True  # baseline --update runs without the gate
    junit_path: Path | None = None
    markdown_path: Path | None = None
    changed_since: str | None = None
    shard: str | None = None
    clean_checkout: bool = False
    worktree: bool = False
    record: bool = False  # t3: write the model answers as replay fixtures
    html_path: Path | None = None  # also write the HTML report (this run and the history's last runs)


def default_jobs() -> int:
    return os.cpu_count() or 1


def results_path(manifest: Manifest, tier: str, json_path: Path | None) -> Path:
    return json_path if json_path is not None else manifest.root / ".evalrun" / "results" / f"{tier}.json"


def update_command(manifest: Manifest, tier: str) -> str:
    default = Path("manifest.toml")
    extra = "" if manifest.path == default or manifest.path.resolve() == default.resolve() else f" --manifest {manifest.path}"
    return f"evalrun baseline --update {tier}{extra}"


def load_checked_manifest(path: Path) -> Manifest:
    """The manifest, with its probe and service tables validated too (exit 2 on a mistake)."""
    manifest = load_manifest(path)
    validate_probes(manifest)
    parse_services(manifest)
    return manifest


def select_plan(manifest: Manifest, options: RunOptions) -> tuple[Plan, ChangedSelection | None]:
    """The tier, the filters, then ``--changed-since``, then ``--shard``: every shard drops the same evals."""
    # Only runs that ask for them pay for git and the shard split.
    from evalrun.selection import durations_from, parse_shard, select_changed, select_shard

    shard = parse_shard(options.shard) if options.shard else None  # a bad --shard is exit 2 before anything
    if options.record and options.tier != "t3":
        raise UsageError(f"--record: only t3 makes live calls to record; {options.tier} never does")
    plan = make_plan(manifest, options.tier, options.evals, options.tags)
    changed = None
    if options.changed_since:
        package_dir = Path(__file__).resolve().parent.parent  # a change to evalrun itself selects everything
        changed = select_changed(plan, options.changed_since, package_dir)
        plan = changed.plan
    if shard is not None:
        plan = select_shard(plan, shard, durations_from(results_path(manifest, options.tier, options.json_path)))
    return plan, changed


def run_tier(options: RunOptions, console: Console) -> int:
    """Run one tier and return its exit code."""
    if options.clean_checkout or options.worktree:
        return _run_in_clean_checkout(options, console)
    manifest = load_checked_manifest(options.manifest_path)
    plan, _ = select_plan(manifest, options)
    return _run_plan(manifest, plan, options, console)


def _run_in_clean_checkout(options: RunOptions, console: Console) -> int:
    """Run from ``git archive HEAD`` (plus uncommitted changes with --worktree) in a temporary folder.

    The selection is made in the real repository (the export has no .git); results
    and reports are written where an ordinary run would write them.
    """
    from evalrun.checkout import clean_checkout

    manifest = load_checked_manifest(options.manifest_path)
    plan, _ = select_plan(manifest, options)
    json_path = (options.json_path or results_path(manifest, options.tier, None)).resolve()
    junit = options.junit_path.resolve() if options.junit_path else None
    markdown = options.markdown_path.resolve() if options.markdown_path else None
    html = options.html_path.resolve() if options.html_path else None
    keep = {p.name for p in plan.evals}
    with clean_checkout(options.manifest_path, options.worktree) as exported:
        console.note(f"running from a clean checkout of HEAD{' plus uncommitted changes' if options.worktree else ''}: {exported.parent}")
        inner = load_checked_manifest(exported)
        full = make_plan(inner, options.tier, [], [])
        narrowed = Plan(
            manifest=inner,
            tier=options.tier,
            evals=[p for p in full.evals if p.name in keep],
            filtered_out=plan.filtered_out,
            filters={**plan.filters, "clean_checkout": ["worktree" if options.worktree else "HEAD"]},
        )
        inner_options = replace(
            options, manifest_path=exported, json_path=json_path, junit_path=junit, markdown_path=markdown,
            html_path=html, clean_checkout=False, worktree=False,
        )
        return _run_plan(inner, narrowed, inner_options, console, shown=manifest)


def _run_plan(
    manifest: Manifest, plan: Plan, options: RunOptions, console: Console, shown: Manifest | None = None
) -> int:
    """Compare, decide, write and report; ``shown`` is the manifest named in hints (not a temporary export)."""
    baseline_file = baseline_path(manifest, options.tier)
    baseline = load_baseline(baseline_file) if options.compare else None  # a bad baseline is exit 2, before any scorer
    results = collect_results(plan, options, console)
    if options.compare:
        results.baseline = compare_tier(
            manifest,
            results,
            baseline,
            strict=options.strict_baseline,
            update_command=update_command(shown or manifest, options.tier),
        )
    code = decide_exit_code(results.evals, results.baseline, results.interrupted)
    results.exit_code = int(code)
    out = results_path(manifest, options.tier, options.json_path)
    write_results(results, out)
    _warn_if(console, record_run(shown or manifest, results, os.environ))
    report_run(results, plan, console)
    console.line(f"results: {out}")
    write_ci_reports(results, options.junit_path, options.markdown_path, console)
    if options.html_path is not None:
        from evalrun.reports_out.html import write_html_after_run

        _warn_if(console, write_html_after_run(shown or manifest, results, options.html_path, os.environ, console))
    return int(code)


def _warn_if(console: Console, warning: str | None) -> None:
    if warning:
        console.warn(warning)


def write_ci_reports(results: RunResults, junit: Path | None, markdown: Path | None, console: Console) -> None:
    """JUnit XML, a Markdown summary, and GitHub's step summary and annotations when asked for."""
    from evalrun.reporters.github import append_github_step_summary, github_annotations
    from evalrun.reporters.junit import write_junit
    from evalrun.reporters.markdown import write_markdown

    if junit is not None:
        write_junit(results, junit)
        console.line(f"junit: {junit}")
    if markdown is not None:
        write_markdown(results, markdown)
        console.line(f"markdown: {markdown}")
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        try:
            append_github_step_summary(results, os.environ)
        except ReportError as exc:  # a summary we cannot write must not change the verdict
            console.warn(f"GITHUB_STEP_SUMMARY: {exc}")
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(results):
            console.line(line)


def collect_results(plan: Plan, options: RunOptions, console: Console) -> RunResults:
    """Guard, probe, start services, execute; return results (not yet compared or judged)."""
    manifest, tier = plan.manifest, options.tier
    started = _now()
    environ = dict(os.environ)
    check_tier_guard(manifest, tier, environ)  # unmet: exit 2 before any scorer starts
    state_dir = manifest.root / ".evalrun" / "services"
    for line in reap_leftovers(state_dir):
        console.warn(line)
    pre = probe_evals(manifest, plan.evals, environ, skips_are_failures(manifest, tier, options.no_skips))
    if not plan.evals:
        console.warn(f"nothing selected to run in {tier} ({_describe_filters(plan)})")
    will_run = [p for p in plan.evals if pre.for_eval(p.name).runs]
    needed = sorted({s for p in will_run for s in p.spec.services})
    services = ServiceManager(
        parse_services(manifest),
        logs_dir=manifest.root / ".evalrun" / "logs",
        state_dir=state_dir,
        environ=environ,
        ready_check=ready_check(manifest),
    )

    models = ModelCalls(manifest, tier, will_run, environ, options.record)

    def prepare(planned: PlannedEval) -> Preparation:
        decision = pre.for_eval(planned.name)
        if decision.fail or decision.skip:
            return Preparation(fail=decision.fail, skip=decision.skip)
        if models.budget_exhausted():
            return Preparation(skip=BUDGET_MESSAGE, status=Status.BUDGET)
        failure = services.failure_for(planned.spec.services)
        if failure:
            return Preparation(fail=failure)
        return Preparation(env={**services.env_for(planned.spec.services), **models.env_for(planned)})

    try:
        with services, models, _sigterm_as_interrupt():
            if models.mode:
                console.note(f"model calls: {models.mode} through {models.proxy.url}")
            for name in needed:
                console.note(f"starting service {name}")
                state = services.start(name)
                if not state.ok:
                    console.error(state.failure or f"service {name} failed")
            console.start_progress(len(plan.evals), tier)
            outcome = execute(
                ExecuteRequest(
                    evals=plan.evals,
                    tier=tier,
                    jobs=options.jobs or default_jobs(),
                    base_env=scorer_base_env(models.base_env),
                    prepare=prepare,
                    finalize=models.finalize,
                    on_finish=console.eval_finished,
                )
            )
            console.stop_progress()
            for line in services.stop_all():
                console.note(line)
    finally:
        console.stop_progress()
    return RunResults(
        evalrun_version=__version__,
        tier=tier,
        manifest=str(plan.manifest.path),
        started_at=started,
        finished_at=_now(),
        interrupted=outcome.interrupted,
        selection={**plan.filters, "filtered_out": plan.filtered_out},
        evals=outcome.results,
    )


def report_run(results: RunResults, plan: Plan, console: Console) -> None:
    """Baseline lines, the summary table, the closing line and the verdict."""
    console.line("")
    if results.baseline is not None:
        for text in format_comparison(results.baseline):
            console.line(text, "red" if text.startswith("regression") else "yellow")
    _print_unchecked(results.evals, console)
    answered = [line for line in map(describe_models, results.evals) if line]
    if answered:
        console.line("models that answered:")
        for line in answered:
            console.line(f"  {line}")
    console.summary(results.evals)
    console.line(closing_line(results.evals))
    code = results.exit_code if results.exit_code is not None else 0
    words = VERDICT_WORDS.get(ExitCode(code), "")
    console.line(f"evalrun {results.tier}: {words} (exit {code})", "green" if code == 0 else "bold red")


def _print_unchecked(evals: list[EvalResult], console: Console) -> None:
    unchecked = [r for r in evals if r.status.is_unchecked]
    if unchecked:
        console.warn(f"not checked ({len(unchecked)}):")
        for r in unchecked:
            console.warn(f"  {r.status.value:<11} {r.name}: {r.message}")


def _describe_filters(plan: Plan) -> str:
    parts = [f"--eval {e}" for e in plan.filters.get("evals", [])]
    parts += [f"--tag {t}" for t in plan.filters.get("tags", [])]
    return "filters: " + " ".join(parts) if parts else "the tier has no evals"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
