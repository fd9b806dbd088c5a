"""``evalrun baseline --update`` and ``evalrun baseline diff``.

An update runs the tier (or reads ``--from-results``), refuses to record a
failing state, and writes ``baselines/<tier>.toml`` atomically, reading the
old baseline again under a lock so concurrent filtered updates both land. A diff compares
the last results with the baseline without running any scorer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
import gc
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from evalrun.baseline import (
    Baseline,
    baseline_fingerprint,
    baseline_lock,
    baseline_path,
    check_unchanged_since,
    compare_tier,
    load_baseline,
    mark_written,
    update_baseline,
    update_command,
    write_baseline,
)
from evalrun.baseline.judges import updated_judges
from evalrun.baseline.settings import gate_settings, updated_settings
from evalrun.errors import ExitCode, OutputError, ResultsError, UsageError
from evalrun.manifest import TIERS
from evalrun.run.context import RunContext
from evalrun.run.collect import collect
from evalrun.run.deliver import keep_and_record, positional_warnings
from evalrun.run.requests import CollectOptions
from evalrun.run.select import default_results_path
from evalrun.workspace import check_writable
from evalrun.plan import make_plan, tier_cells
from evalrun.reports_out.baseline_text import baseline_matches, baseline_written, format_comparison, tier_note
from evalrun.session import Session
from evalrun.locks import hold_lock
from evalrun.results import RunResults, load_results_counted, load_run_results


@dataclass(frozen=True)
class UpdateRequest:
    """``evalrun baseline --update TIER`` (or ``--all``): what to run or read, and which evals."""

    tiers: list[str] = field(default_factory=list)
    all_tiers: bool = False
    evals: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    jobs: int = 0
    from_results: Path | None = None
    experiments: list[str] = field(default_factory=list)
    repeat: int | None = None


@dataclass(frozen=True)
class DiffRequest:
    """``evalrun baseline diff``: the tier, the results to compare, and whether stale entries fail."""

    tier: str
    from_results: Path | None = None
    strict: bool = False


def update_baselines(request: UpdateRequest, session: Session) -> int:
    tiers, all_tiers, evals, tags = request.tiers, request.all_tiers, request.evals, request.tags
    jobs, from_results, experiments, repeat = request.jobs, request.from_results, request.experiments, request.repeat
    console, manifest = session.console, session.manifest
    if all_tiers and tiers:
        raise UsageError(f"--update {tiers[0]} and --all: name one tier or pass --all, not both")
    if all_tiers:
        tiers = [t for t in TIERS if t in manifest.tiers]
    for tier in tiers:
        if tier not in TIERS:
            raise UsageError(f"--update {tier}: unknown tier; use one of {', '.join(TIERS)}, or --all")
    if repeat is not None and from_results is not None:
        raise UsageError("--repeat runs the tier; --from-results reads a run already made: pass one of them")
    if all_tiers and from_results is not None:
        raise UsageError("--from-results reads one tier's results; use it with --update TIER, not --all")
    pending: list[tuple[str, Path, RunResults, set[str], bool]] = []
    snapshots: dict[Path, str | None] = {}
    earlier: dict[str, Baseline | None] = {}  # each tier's baseline before this update: its names are not new
    for tier in tiers:
        plan = make_plan(manifest, tier, evals, tags, experiments)
        path = check_writable(baseline_path(manifest, tier), "baseline")
        early = load_baseline(path)  # a bad baseline is exit 2 before any scorer starts
        snapshots[path] = baseline_fingerprint(path)  # what the file was before any scorer could touch it
        earlier[tier] = early
        if from_results is not None:
            results = load_run_results(from_results, f"pass the results of a run ({session.workspace.results(tier).relative_to(manifest.root)})")
            if results.tier != tier:
                raise ResultsError(f"{from_results}: holds tier {results.tier}, not {tier}; pass --update {results.tier}")
            chosen = ("evals", "tags", "experiments")
            filtered = bool(any(results.selection.get(k) for k in chosen) or evals or tags or experiments)
            if evals or tags or experiments:
                keep = {p.name for p in plan.evals}
                results = replace(results, evals=[e for e in results.evals if e.name in keep])
        else:
            context = RunContext.build(session, tier)
            results = collect(context, plan, CollectOptions(jobs=jobs, repeat=repeat), console, early)
            keep_and_record(results, context.workspace.results(tier), context, source="baseline")
            if results.interrupted:
                raise KeyboardInterrupt  # exit 130: an interrupted update records nothing
            filtered = plan.is_filtered
        names = set(tier_cells(manifest, tier))
        update_baseline(early, results, names, filtered)  # raises BaselineRefused
        pending.append((tier, path, results, names, filtered))
    # Write only after every tier was accepted: a refusal leaves every file as it was.
    # Each baseline is read again under its lock, so a concurrent update is merged, never lost.
    with ExitStack() as locks:
        for _tier, path, *_ in sorted(pending, key=lambda item: str(item[1])):  # one order: no deadlock
            locks.enter_context(hold_lock(baseline_lock(manifest, path)))
        written = []
        for tier, path, *_ in pending:  # every file checked before any is written
            check_unchanged_since(manifest, path, snapshots[path], f"rerun {update_command(tier, session.manifest_path)}")
        for tier, path, results, names, filtered in pending:
            old = load_baseline(path)
            new, notes = update_baseline(old, results, names, filtered)
            settings = updated_settings(
                old.settings if old is not None else None, gate_settings(manifest, tier),
                ran=(e.name for e in results.evals), keep=new,
            )
            judges = updated_judges(old.judges if old is not None else None, results.evals, keep=new)
            try:
                write_baseline(path, new, update_command(tier, session.manifest_path), settings, judges)
            except OSError as exc:
                raise OutputError(f"baseline {path}: cannot write ({exc.strerror or exc}); check the folder") from None
            mark_written(manifest, path)
            written.append((tier, path, new, notes))
    for tier, _path, results, _names, _filtered in pending:
        positional_warnings(results, earlier[tier], console)
    for tier, path, new, notes in written:
        for note in notes:
            console.note(tier_note(tier, note))
        console.line(baseline_written(path, len(new), sum(len(v) for v in new.values())))
    return int(ExitCode.OK)


def diff_baseline(request: DiffRequest, session: Session) -> int:
    tier, from_results, strict = request.tier, request.from_results, request.strict
    console, manifest = session.console, session.manifest
    source = from_results or default_results_path(manifest, tier)
    path = baseline_path(manifest, tier)
    with _collector_paused():
        # Checks read as counts: a diff of a million checks never builds a million records.
        results, counts = load_results_counted(source)
        if results.tier != tier:
            raise ResultsError(
                f"{source}: holds tier {results.tier}, not {tier}; pass it to evalrun baseline diff {results.tier}"
            )
        baseline = load_baseline(path)
    comparison = compare_tier(
        manifest, results, baseline, strict=strict, update_command=update_command(tier, manifest.path), counts=counts
    )
    lines = format_comparison(comparison, results.evals, selection=results.selection)
    for text in lines:
        console.line(text)
    if not lines:
        console.line(baseline_matches(tier, source, path))
    return int(ExitCode.REGRESSED if comparison.regressions else ExitCode.OK)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading makes millions of dicts and no cycle: the cyclic collector would walk them again and again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
