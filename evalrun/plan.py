"""Choosing what to run: the tier, its evals under their experiments, then the filters.

A planned run is one eval under one experiment (a "cell"), named
``eval[experiment]`` everywhere (results, baselines, fixtures, shards,
history); an eval that runs under no experiment keeps its plain name. A
column's ``skip`` rule leaves a cell out of the plan with its reason (listed,
never run, never compared).

Filters (``--eval``, ``--tag``, ``--experiment``) of one kind are alternatives
(``--tag a --tag b``: either tag); filters of different kinds must all hold
(``--eval x --tag a``: x, if it has tag a). ``--eval`` takes an eval (all its
cells) or one cell; ``--experiment`` keeps only cells of those columns.
Everything of the tier that a filter left out is listed, so the baseline
comparison can say what it did not compare.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from evalrun.errors import UsageError
from evalrun.manifest import TIERS, EvalSpec, Experiment, Manifest


class PlannedEval(NamedTuple):
    spec: EvalSpec
    dir: Path  # absolute
    repeat: int = 0  # which run of a repeated eval this is (EVALRUN_REPEAT); see evalrun.repeats
    experiment: str | None = None  # the column it runs under (EVALRUN_EXPERIMENT), if any
    column: Experiment | None = None

    @property
    def name(self) -> str:
        """The cell's name: ``eval[experiment]``, or the eval's own name without experiments."""
        return cell_name(self.spec.name, self.experiment)

    def env(self) -> dict[str, str]:
        """The eval's ``env`` with its column's over it: the column is what changes."""
        if self.column is None:
            return self.spec.env
        return {**self.spec.env, **self.column.env}


def cell_name(eval_name: str, experiment: str | None) -> str:
    return f"{eval_name}[{experiment}]" if experiment else eval_name


def split_cell_name(name: str) -> tuple[str, str | None]:
    """``("agent", "mini")`` for ``agent[mini]``; ``(name, None)`` for a plain name."""
    if name.endswith("]") and "[" in name:
        base, _, experiment = name[:-1].rpartition("[")
        if base and experiment:
            return base, experiment
    return name, None


def cells(manifest: Manifest, spec: EvalSpec) -> list[tuple[PlannedEval, str | None]]:
    """Each planned run of ``spec`` with the reason its column's skip rule leaves it out (None: it runs)."""
    folder = manifest.eval_dir(spec)
    columns = manifest.columns(spec)
    if not columns:
        return [(PlannedEval(spec=spec, dir=folder), None)]
    out = []
    for name in columns:
        experiment = manifest.experiments[name]
        planned = PlannedEval(spec=spec, dir=folder, experiment=name, column=experiment)
        out.append((planned, experiment.skip_reason(name, spec)))
    return out


def tier_cells(manifest: Manifest, tier: str | None) -> list[str]:
    """The names of every planned run of ``tier`` (all tiers when None) that a skip rule does not leave out."""
    return [
        name
        for spec in manifest.evals
        if tier is None or spec.tier == tier
        for name, skip in _cell_names(manifest, spec)
        if skip is None
    ]


def _cell_names(manifest: Manifest, spec: EvalSpec) -> list[tuple[str, str | None]]:
    """``cells`` by name only: the same names and skip reasons, without resolving the eval's folder on disk
    (the baseline comparison asks for every tier's names, and a folder's ``resolve()`` is a stat per part)."""
    columns = manifest.columns(spec)
    if not columns:
        return [(spec.name, None)]
    return [(cell_name(spec.name, name), manifest.experiments[name].skip_reason(name, spec)) for name in columns]


class Plan(NamedTuple):
    """What the selection chose, and what it left out and why. The manifest and tier it chose from are the
    run's (``evalrun.run.context``): ``evalrun.selection`` narrows a plan with them as arguments (``_replace``).
    Every field is given (no shared default: the filters and what they left out go into the results)."""

    evals: list[PlannedEval]
    filtered_out: list[str]  # names of the tier's evals a filter left out
    filters: dict[str, list[str]]
    rule_skips: dict[str, str]  # cell -> why its column's skip rule leaves it out
    durations: dict[str, float]  # cell -> its recent seconds (evalrun.selection.timings)

    @property
    def is_filtered(self) -> bool:
        return any(self.filters.values())


def known_tier(tier: str | None) -> str | None:
    """``tier`` if it is one of ``TIERS`` (or None); else the one "unknown tier" line (exit 2).

    The command line checks every TIER it parses here (``evalrun.cli``); ``make_plan`` checks again for callers in code.
    """
    if tier is not None and tier not in TIERS:
        raise UsageError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
    return tier


def make_plan(
    manifest: Manifest, tier: str | None, evals: list[str], tags: list[str], experiments: list[str] | None = None
) -> Plan:
    """Select the runs of ``tier`` (all tiers when None) that pass the filters."""
    experiments = list(experiments or [])
    known_tier(tier)
    unknown_columns = [n for n in experiments if n not in manifest.experiments]
    if unknown_columns:
        listing = ", ".join(manifest.experiments) or "(the manifest defines none)"
        raise UsageError(f"--experiment {unknown_columns[0]}: no such experiment in {manifest.path}; known: {listing}")
    every = {spec.name: cells(manifest, spec) for spec in manifest.evals}
    # What an --eval may name: an eval, or one of its cells.
    named = {spec.name: spec for spec in manifest.evals} | {p.name: spec for spec in manifest.evals for p, _ in every[spec.name]}
    unknown = [n for n in evals if n not in named]
    if unknown:
        listing = ", ".join(manifest.names()) or "(the manifest has no evals)"
        raise UsageError(f"--eval {unknown[0]}: no such eval in {manifest.path}; known evals: {listing}")
    in_tier = [e for e in manifest.evals if tier is None or e.tier == tier]
    elsewhere = [n for n in evals if tier is not None and named[n].tier != tier]
    if elsewhere:
        other = named[elsewhere[0]].tier
        raise UsageError(f"--eval {elsewhere[0]}: that eval is in tier {other}, not {tier}; run evalrun {other}")
    chosen: list[PlannedEval] = []
    left_out: list[str] = []
    rule_skips: dict[str, str] = {}
    for spec in in_tier:
        for planned, skip in every[spec.name]:
            if (
                (evals and spec.name not in evals and planned.name not in evals)
                or (tags and not set(tags) & set(spec.tags))
                or (experiments and planned.experiment not in experiments)
            ):
                if skip is None:
                    left_out.append(planned.name)
            elif skip is not None:
                rule_skips[planned.name] = skip
            else:
                chosen.append(planned)
    filters = {"evals": list(evals), "tags": list(tags)}
    if experiments:
        filters["experiments"] = experiments
    return Plan(evals=chosen, filtered_out=left_out, filters=filters, rule_skips=rule_skips, durations={})
