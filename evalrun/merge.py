"""``evalrun merge``: the results files of ``--shard I/N`` runs, combined into one run.

This module owns the checks that make a sharded run as trustworthy as a
single one: the files are of one tier, every shard 1..N is there exactly once,
the shards ran with the same options, no eval appears twice, and together they
hold exactly the evals the manifest plans for that tier. A missing shard or
eval is an error (exit 2), never a green run. The merged results are then
judged by the pipeline's ``judge`` step, as one run would be.

The shards of ``evalrun bites TIER --shard I/N`` (results of kind "bites")
merge alike: one N, each shard once, the same split, and together every bite
the manifest gives the tier, each once; they are judged as bites (never
compared with a baseline). Bites and run shards never merge together.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from evalrun.bites import plan_bites, select_bite_shard
from evalrun.models.cost import run_cost
from evalrun.errors import ResultsError, UsageError
from evalrun.manifest import Manifest
from evalrun.plan import make_plan, tier_cells
from evalrun.run.isolation import combined_network
from evalrun.results import EvalResult, RunResults, load_results, merged_run_id
from evalrun.text import plural
from evalrun.workspace import workspace_of

# Options that decide which evals a shard's plan held; every shard must agree on them.
_SHARED_FILTERS = ("evals", "tags", "experiments", "changed_since", "unchanged")


def merge_results(paths: list[Path], manifest: Manifest, tier: str | None = None) -> RunResults:
    """Combine shard results into one ``RunResults`` (not yet compared or judged).

    ``tier`` defaults to the tier of the first file. Raises ``ResultsError``
    (exit 2) naming the file and the problem when the shards do not add up.
    """
    if not paths:
        raise UsageError("merge: no results files given; pass every shard's results file")
    _refuse_repeated_paths(paths)
    shards = [(path, load_results(path)) for path in paths]
    _refuse_mixed_kinds(shards)
    tier = tier or shards[0][1].tier
    bites = shards[0][1].kind == "bites"
    for path, results in shards:
        if results.tier != tier:
            what, fix = ("bites", "the bites of one tier") if bites else ("results of tier", "the files of one tier")
            raise ResultsError(f"merge: {path}: {what} {results.tier}, not {tier}; merge {fix}")
    if bites:
        return _merge_bites(shards, manifest, tier)
    total, by_index = _shard_records(shards)
    if len(by_index) < total:
        missing = next(i for i in range(1, total + 1) if i not in by_index)
        raise ResultsError(
            f"merge: shard {missing}/{total} is missing (have {_have(by_index, total)}); a shard failed or its "
            f"results were not uploaded"
        )
    _check_same_split(shards, "evals")
    filters = _agreed_filters(shards)
    expected = _expected_evals(manifest, tier, filters)
    merged = _union(shards, expected, manifest, tier)
    tier_names = tier_cells(manifest, tier)
    return _merged(
        shards, manifest, tier, merged,
        selection={**filters, "shards": _shard_files(shards), "filtered_out": [n for n in tier_names if n not in expected]},
        cost=run_cost(r.models for r in merged),
    )


def _merged(
    shards: list[tuple[Path, RunResults]], manifest: Manifest, tier: str, evals: list[EvalResult], **fields: object
) -> RunResults:
    """The one run the shards make: from the first start to the last finish, interrupted if any shard was."""
    finished = [r.finished_at for _, r in shards]
    started = min(r.started_at for _, r in shards)
    return RunResults(
        evalrun_version=shards[0][1].evalrun_version,
        tier=tier,
        manifest=str(manifest.path),
        started_at=started,
        run_id=merged_run_id(tier, started, [r.run_id for _, r in shards]),  # the same shards: the same merged run
        finished_at=None if None in finished else max(f for f in finished if f is not None),
        interrupted=any(r.interrupted for _, r in shards),
        evals=evals,
        network=combined_network([r.network for _, r in shards]),
        **fields,  # type: ignore[arg-type]
    )


def _shard_files(shards: list[tuple[Path, RunResults]]) -> list[str]:
    return [f"{r.selection['shard'][0]}: {path}" for path, r in shards]


def _refuse_repeated_paths(paths: list[Path]) -> None:
    seen: set[Path] = set()
    for path in paths:
        key = path.resolve()
        if key in seen:
            raise UsageError(f"merge: {path} is given twice; pass each shard's results file once")
        seen.add(key)


def _refuse_mixed_kinds(shards: list[tuple[Path, RunResults]]) -> None:
    bites = next((path for path, r in shards if r.kind == "bites"), None)
    run = next((path for path, r in shards if r.kind != "bites"), None)
    if bites is not None and run is not None:
        raise ResultsError(
            f"merge: {bites} holds bites (evalrun bites) but {run} a run's evals; merge the bites shards and "
            f"the run shards separately"
        )


def _shard_records(shards: list[tuple[Path, RunResults]]) -> tuple[int, dict[int, Path]]:
    """Every file's ``I/N``: one N for all, each I once. Returns N and the file of each I present."""
    parsed: list[tuple[Path, int, int]] = []
    for path, results in shards:
        record = results.selection.get("shard") or []
        index, total = _parse_record(record[0]) if len(record) == 1 else (None, None)
        if index is None or total is None:
            raise ResultsError(
                f"merge: {path}: no shard record, it was not run with --shard I/N; merge only shard results"
            )
        parsed.append((path, index, total))
    first_path, _, total = parsed[0]
    by_index: dict[int, Path] = {}
    for path, index, this_total in parsed:
        if this_total != total:
            raise ResultsError(
                f"merge: {first_path} is one of {total} shards but {path} is one of {this_total}; "
                f"run every shard with the same N"
            )
        if index in by_index:
            raise ResultsError(
                f"merge: {by_index[index]} and {path} are both shard {index}/{total}; pass each shard's results once"
            )
        by_index[index] = path
    return total, by_index


def _have(by_index: dict[int, Path], total: int) -> str:
    return ", ".join(f"{i}/{total}" for i in sorted(by_index))


def _check_same_split(shards: list[tuple[Path, RunResults]], what: str) -> None:
    first_path, first = shards[0]
    split = first.selection.get("shard_split")
    why, fix = (("another manifest or filters", "from the same commit with the same options") if what == "bites" else
                ("another manifest, filters or durations file", "from the same commit with the same durations file"))
    for path, results in shards[1:]:
        if results.selection.get("shard_split") != split:
            raise ResultsError(
                f"merge: {first_path} and {path} split the {what} differently ({why}); run every shard {fix}"
            )


def _parse_record(text: object) -> tuple[int | None, int | None]:
    if not isinstance(text, str):
        return None, None
    left, sep, right = text.partition("/")
    if not (sep and left.isdigit() and right.isdigit()):
        return None, None
    index, total = int(left), int(right)
    return (index, total) if 1 <= index <= total else (None, None)


def _agreed_filters(shards: list[tuple[Path, RunResults]]) -> dict[str, list[str]]:
    first_path, first = shards[0]
    agreed = {key: list(first.selection.get(key) or []) for key in _SHARED_FILTERS}
    for path, results in shards[1:]:
        for key in _SHARED_FILTERS:
            value = list(results.selection.get(key) or [])
            if sorted(value) != sorted(agreed[key]):
                raise ResultsError(
                    f"merge: {first_path} and {path} were run with different {key} ({_show(agreed[key])} vs "
                    f"{_show(value)}); run every shard with the same options from the same commit"
                )
    return agreed


def _expected_evals(manifest: Manifest, tier: str, filters: dict[str, list[str]]) -> list[str]:
    """What the manifest plans for the tier under the shards' shared filters, in manifest order."""
    plan = make_plan(manifest, tier, filters["evals"], filters["tags"], filters.get("experiments"))
    unchanged = set(filters["unchanged"])
    return [p.name for p in plan.evals if p.name not in unchanged]


def _union(
    shards: list[tuple[Path, RunResults]], expected: list[str], manifest: Manifest, tier: str
) -> list[EvalResult]:
    found = _each_once(
        shards, set(expected),
        lambda name, first, then: f'merge: eval "{name}" is in both {first} and {then}; shards must not overlap, '
                                  f"so give every shard the same manifest and durations file",
        lambda name, path: f'merge: eval "{name}" in {path} is not planned for {tier} by {manifest.path}; '
                           f"merge with the manifest the shards ran from",
    )
    missing = [name for name in expected if name not in found]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ResultsError(
            f'merge: eval "{missing[0]}"{more} of {tier} is in no shard\'s results; a shard is missing or '
            f"failed to upload"
        )
    return [found[name][1] for name in expected]


def _each_once(
    shards: list[tuple[Path, RunResults]],
    wanted: set[str],
    overlap: Callable[[str, Path, Path], str],
    unknown: Callable[[str, Path], str],
) -> dict[str, tuple[Path, EvalResult]]:
    """Every record of the shards by name, with the file it came from: a name in two files, or one not
    ``wanted``, is the one-line error ``overlap`` or ``unknown`` words."""
    found: dict[str, tuple[Path, EvalResult]] = {}
    for path, results in shards:
        for result in results.evals:
            if result.name in found:
                raise ResultsError(overlap(result.name, found[result.name][0], path))
            if result.name not in wanted:
                raise ResultsError(unknown(result.name, path))
            found[result.name] = (path, result)
    return found


def _merge_bites(shards: list[tuple[Path, RunResults]], manifest: Manifest, tier: str) -> RunResults:
    """Bites shards (``evalrun bites TIER --shard I/N``): together every bite of the tier, each once."""
    total, by_index = _shard_records(shards)
    filters = _agreed_filters(shards)
    plan = make_plan(manifest, tier, filters["evals"], filters["tags"])
    runs = plan_bites(plan.evals)
    if len(by_index) < total:
        missing = next(i for i in range(1, total + 1) if i not in by_index)
        names = [r.name for r in select_bite_shard(runs, (missing, total))]
        held = f"no results file holds its {plural(len(names), 'bite')}: {_names(names)}" if names else "it holds no bite"
        expected = workspace_of(manifest.root).bites_results(tier, f"{missing}/{total}").name
        raise ResultsError(
            f"merge: bites shard {missing}/{total} ({expected}) is missing (have {_have(by_index, total)}): {held}; "
            f"a shard failed or its results were not uploaded"
        )
    _check_same_split(shards, "bites")
    found = _each_once(
        shards, {r.name for r in runs},
        lambda name, first, then: f'merge: "{name}" is in both {first} and {then}; bites shards must not overlap, '
                                  f"so run every shard from the same commit with the same options",
        lambda name, path: f'merge: "{name}" in {path} is not a bite of {tier} in {manifest.path}; merge with the '
                           f"manifest the shards ran from",
    )
    missing_bites = [r.name for r in runs if r.name not in found]
    if missing_bites:
        raise ResultsError(
            f"merge: no shard's results hold {plural(len(missing_bites), 'bite')} of {tier}: {_names(missing_bites)}; "
            f"a shard left them out or failed to upload"
        )
    return _merged(
        shards, manifest, tier, [found[r.name][1] for r in runs], kind="bites",
        selection={**filters, "filtered_out": plan.filtered_out, "bites": [r.name for r in runs],
                   "shards": _shard_files(shards)},
    )


def _names(names: list[str]) -> str:
    """``"a: bite x"``, ``"a: bite x", "b: bite y"`` or ``"a: bite x", "b: bite y" and 3 more``."""
    shown = ", ".join(f'"{n}"' for n in names[:2])
    return shown + (f" and {len(names) - 2} more" if len(names) > 2 else "")


def _show(value: list[str]) -> str:
    return ", ".join(value) if value else "none"
