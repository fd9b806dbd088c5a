"""``evalrun baseline --update`` and ``evalrun baseline diff``.

An update runs the tier (or reads ``--from-results``), refuses to record a
failing state, and writes ``baselines/<tier>.toml`` atomically. A diff compares
the last results with the baseline without running any scorer.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalrun.baseline import (
    baseline_path,
    compare_tier,
    format_comparison,
    load_baseline,
    update_baseline,
    write_baseline,
)
from evalrun.commands.run import RunOptions, collect_results, load_checked_manifest, results_path, update_command
from evalrun.console import Console
from evalrun.errors import ExitCode, ResultsError, UsageError
from evalrun.history import record_run
from evalrun.manifest import TIERS
from evalrun.plan import make_plan
from evalrun.results import RunResults, load_results, write_results


def update_baselines(
    *,
    manifest_path: Path,
    tiers: list[str],
    all_tiers: bool,
    evals: list[str],
    tags: list[str],
    jobs: int,
    from_results: Path | None,
    console: Console,
) -> int:
    manifest = load_checked_manifest(manifest_path)
    if all_tiers:
        tiers = [t for t in TIERS if t in manifest.tiers]
    for tier in tiers:
        if tier not in TIERS:
            raise UsageError(f"--update {tier}: unknown tier; use one of {', '.join(TIERS)}")
    if all_tiers and from_results is not None:
        raise UsageError("--from-results reads one tier's results; use it with --update TIER, not --all")
    pending: list[tuple[str, Path, dict[str, dict[str, int]], list[str]]] = []
    for tier in tiers:
        plan = make_plan(manifest, tier, evals, tags)
        path = baseline_path(manifest, tier)
        old = load_baseline(path)
        if from_results is not None:
            results = load_results(from_results)
            if results.tier != tier:
                raise ResultsError(f"{from_results}: holds tier {results.tier}, not {tier}; pass --update {results.tier}")
            filtered = bool(results.selection.get("evals") or results.selection.get("tags") or evals or tags)
            if evals or tags:
                keep = {p.name for p in plan.evals}
                results = results.model_copy(update={"evals": [e for e in results.evals if e.name in keep]})
        else:
            results = collect_results(plan, RunOptions(manifest_path, tier, evals, tags, jobs), console)
            write_results(results, results_path(manifest, tier, None))
            if warning := record_run(manifest, results, os.environ, source="baseline"):
                console.warn(warning)
            filtered = plan.is_filtered
        new, notes = update_baseline(old, results, plan.tier_names(), filtered)  # raises BaselineRefused
        pending.append((tier, path, new, notes))
    # Write only after every tier was accepted: a refusal leaves every file as it was.
    for tier, path, new, notes in pending:
        write_baseline(path, new, update_command(manifest, tier))
        for note in notes:
            console.note(f"{tier}: {note}")
        checks = sum(len(v) for v in new.values())
        console.line(f"wrote {path} ({len(new)} evals, {checks} checks)")
    return int(ExitCode.OK)


def diff_baseline(*, manifest_path: Path, tier: str, from_results: Path | None, strict: bool, console: Console) -> int:
    manifest = load_checked_manifest(manifest_path)
    if tier not in TIERS:
        raise UsageError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
    source = from_results or results_path(manifest, tier, None)
    results: RunResults = load_results(source)
    path = baseline_path(manifest, tier)
    if results.tier != tier:
        raise ResultsError(f"{source}: holds tier {results.tier}, not {tier}; pass it to evalrun baseline diff {results.tier}")
    comparison = compare_tier(
        manifest, results, load_baseline(path), strict=strict, update_command=update_command(manifest, tier)
    )
    lines = format_comparison(comparison)
    for text in lines:
        console.line(text)
    if not lines:
        console.line(f"{tier}: results in {source} match {path}")
    return int(ExitCode.REGRESSED if comparison.regressions else ExitCode.OK)
