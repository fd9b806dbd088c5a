"""``evalrun bites [TIER]``: run each bite in a clean copy of the checkout and report caught or not.

Each bite gets its own export (``git archive HEAD``, plus uncommitted tracked
changes with ``--worktree``), so bites never touch the working tree and never
see each other. The bite is laid on the export, then the eval runs there
exactly as its tier runs it (``evalrun.run.pipeline.collect``: probes, services,
the replay proxy in t2, no key), quietly; its result is judged by
``evalrun.bites.judge_bite``. ``--jobs N`` runs N bites at once, ``--shard
I/N`` a share of them. The bites' results are a results file of their own
(``.evalrun/results/bites-<tier>.json``), and JUnit, Markdown and HTML when
asked; they are not compared with the baseline and not written to the history.
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from evalrun import __version__
from evalrun.bites import (
    BiteNotApplied, BiteRun, apply_bite, bite_shard_split, bites_exit_code, judge_bite, plan_bites, select_bite_shard,
)
from evalrun.errors import EvalrunError, ExitCode, UsageError
from evalrun.run.context import RunContext
from evalrun.session import Session
from evalrun.manifest import load_manifest
from evalrun.run.collect import collect
from evalrun.run.deliver import write
from evalrun.run.requests import CollectOptions, Outputs
from evalrun.plan import Plan, make_plan
from evalrun.reports_out.bites import (
    LIVE_BITES, WAITING_FOR_BITES, bites_header, bites_page_note, html_not_written, html_written, report_bites, show_bite,
)
from evalrun.reports_out.terminal import Console
from evalrun.run.isolation import combined_network, header
from evalrun.results import EvalResult, NetworkIsolation, RunResults, new_run_id, redact_result
from evalrun.workspace import check_writable, workspace_of


@dataclass(frozen=True)
class BitesRequest:
    manifest_path: Path
    tier: str | None = None  # None: t1 and t2
    evals: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    jobs: int = 0
    shard: str | None = None
    worktree: bool = False
    json_path: Path | None = None
    junit_path: Path | None = None
    markdown_path: Path | None = None
    html_path: Path | None = None


def run_bites(request: BitesRequest, session: Session) -> int:
    environ, manifest = session.environ, session.manifest
    tiers = [request.tier] if request.tier else [t for t in ("t1", "t2") if t in manifest.tiers]
    outputs_given = any(p is not None for p in (request.json_path, request.junit_path, request.markdown_path,
                                                request.html_path))
    if len(tiers) > 1 and outputs_given:
        raise UsageError("bites: --json, --junit, --markdown and --html write one tier's bites; name it: evalrun bites t2 ...")
    shard = None
    if request.shard:
        from evalrun.selection.shards import parse_shard

        parsed = parse_shard(request.shard, environ)
        shard = (parsed.index, parsed.total)
        request = replace(request, shard=str(parsed))  # recorded as "I/N", however it was typed
    codes = []
    for tier in tiers:
        plan = make_plan(manifest, tier, request.evals, request.tags)
        runs = plan_bites(plan.evals)
        split = None
        if shard is not None:
            split = bite_shard_split(runs, shard[1])  # the whole split's fingerprint, as run shards record it
            runs = select_bite_shard(runs, shard)
        outputs = Outputs(
            results=check_writable(request.json_path or workspace_of(manifest.root).bites_results(tier, request.shard), "--json"),
            junit=check_writable(request.junit_path, "--junit") if request.junit_path else None,
            markdown=check_writable(request.markdown_path, "--markdown") if request.markdown_path else None,
            html=check_writable(request.html_path, "--html") if request.html_path else None,
        )
        codes.append(_run_tier_bites(session, plan, runs, tier, request, outputs, split))
    return int(_worst(codes))


def _run_tier_bites(session: Session, plan: Plan, runs: list[BiteRun], tier: str, request: BitesRequest,
                    outputs: Outputs, split: str | None = None) -> int:
    console, manifest = session.console, session.manifest
    started = _now()
    if tier == "t3":
        console.warn(LIVE_BITES)
    console.line(bites_header(tier, len(runs), request.worktree))
    secrets = session.secrets.values  # the session's: the same for every bite of the tier
    results: dict[str, EvalResult] = {}
    interrupted = False
    jobs = request.jobs or min(4, os.cpu_count() or 1)

    networks: list[NetworkIsolation | None] = []  # each bite's run phase: isolated, and how

    def one(run: BiteRun) -> EvalResult:
        result = redact_result(_run_one(run, tier, request, session, networks), secrets)
        show_bite(console, result)
        return result

    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="bite")
    try:
        futures = {run.name: pool.submit(one, run) for run in runs}
        for name, future in futures.items():
            results[name] = future.result()
    except KeyboardInterrupt:
        interrupted = True
        for future in futures.values():
            future.cancel()
        console.warn(WAITING_FOR_BITES)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if interrupted:
        for run in runs:
            if run.name not in results:
                results[run.name] = judge_bite(run, EvalResult(name=run.planned.name, tier=tier, dir=run.planned.spec.dir,
                                                               status="interrupted", message="interrupted"))
    ordered = [results[r.name] for r in runs]
    code = bites_exit_code(ordered, interrupted)
    judged = RunResults(
        kind="bites", evalrun_version=__version__, tier=tier, manifest=str(manifest.path), started_at=started,
        run_id=new_run_id(tier, started), finished_at=_now(),
        interrupted=interrupted,
        selection={**plan.filters, "filtered_out": plan.filtered_out, "bites": [r.name for r in runs],
                   **({"shard": [request.shard], "shard_split": [split]} if request.shard else {})},
        evals=ordered, exit_code=int(code), network=combined_network(networks) if tier in ("t1", "t2") else None,
    )
    if judged.network is not None:  # each bite's header went to its own quiet console: the tier's is said here
        (console.note if judged.network.isolated else console.warn)(header(judged.network))
    write(judged, outputs, RunContext.build(session, tier))
    report_bites(judged, console, outputs.results, outputs.junit, outputs.markdown)
    if outputs.html is not None:
        _write_html(judged, outputs.html, console, secrets)
    return int(code)


def _run_one(run: BiteRun, tier: str, request: BitesRequest, session: Session,
             networks: list[NetworkIsolation | None] | None = None) -> EvalResult:
    """The eval under one bite, in its own clean copy; every problem becomes a "broken" result."""
    from evalrun.selection.checkout import clean_checkout

    try:
        with clean_checkout(request.manifest_path, request.worktree) as exported:
            inner = load_manifest(exported)
            spec = next((s for s in inner.evals if s.name == run.planned.spec.name), None)
            if spec is None:
                return judge_bite(run, None, f"the clean copy's manifest has no eval {run.planned.spec.name}; commit it")
            bite = next((b for b in spec.bites if b.name == run.bite.name), None)
            if bite is None:
                return judge_bite(run, None, f"the clean copy's manifest has no bite {run.bite.name}; commit it")
            run = BiteRun(run.planned, bite)  # judged by the clean copy's own bite: what was committed
            eval_dir = inner.eval_dir(spec)
            try:
                apply_bite(bite, eval_dir, _top_of(exported, request.manifest_path))
            except BiteNotApplied as exc:
                return judge_bite(run, None, str(exc))
            bitten = spec.model_copy(update={"env": {**spec.env, **bite.env}})
            cell = next(p for p in make_plan(inner, tier, [run.planned.name], []).evals if p.name == run.planned.name)
            planned = cell._replace(spec=bitten)
            plan = Plan(evals=[planned], filtered_out=[], filters={}, rule_skips={}, durations={})
            quiet = Console(stream=io.StringIO(), env={})
            context = RunContext.build(session, tier, inner)  # each bite is a run of its own, in its own copy
            collected = collect(context, plan, CollectOptions(jobs=1), quiet)
            if networks is not None:
                networks.append(collected.network)
    except EvalrunError as exc:  # a clean copy that cannot be made, a manifest the export breaks
        return judge_bite(run, None, str(exc))
    except OSError as exc:  # a file of the copy that cannot be read or written: this bite is broken, the others run on
        return judge_bite(run, None, f"{exc.filename or 'the clean copy'}: {exc.strerror or exc}")
    if collected.interrupted:
        raise KeyboardInterrupt
    found = [r for r in collected.evals if r.name == run.planned.name]
    return judge_bite(run, found[0] if found else None, "the eval left no result")


def _top_of(exported_manifest: Path, manifest_path: Path) -> Path:
    """The export's top folder: as many levels above the exported manifest as the manifest is below the repository's top."""
    from evalrun.selection.checkout import repo_toplevel

    top = repo_toplevel(manifest_path.resolve(), "bites")
    depth = len(manifest_path.resolve().relative_to(top).parts)
    folder = exported_manifest
    for _ in range(depth):
        folder = folder.parent
    return folder


def _write_html(results: RunResults, path: Path, console: Console, secrets: frozenset[str]) -> None:
    from evalrun.history.records import GitInfo, make_record
    from evalrun.reports_out.html import write_html_report

    try:
        record = make_record(results, GitInfo(), "bites", set(secrets))
        write_html_report(path, [record], [bites_page_note(results.tier)])
    except OSError as exc:
        console.warn(html_not_written(path, exc))
        return
    console.line(html_written(path))


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _worst(codes: list[int]) -> int:
    """One exit code for several tiers, in the README's order: 130, 1, 3, 4, 5, then 0."""
    for code in (ExitCode.INTERRUPTED, ExitCode.FAILED, ExitCode.REGRESSED, ExitCode.UNCHECKED):
        if code in codes:
            return int(code)
    if codes and all(c == ExitCode.NOTHING_SELECTED for c in codes):
        return int(ExitCode.NOTHING_SELECTED)
    return int(ExitCode.OK)
