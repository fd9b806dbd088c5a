"""Choosing what to run: the tier, then ``--eval`` and ``--tag`` filters.

Filters of one kind are alternatives (``--tag a --tag b``: either tag); filters
of different kinds must all hold (``--eval x --tag a``: x, if it has tag a).
Everything of the tier that a filter left out is listed, so the baseline
comparison can say what it did not compare.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalrun.errors import UsageError
from evalrun.manifest import TIERS, EvalSpec, Manifest


@dataclass(frozen=True)
class PlannedEval:
    spec: EvalSpec
    dir: Path  # absolute
    repeat: int = 0  # which run of a repeated eval this is (EVALRUN_REPEAT); see evalrun.repeats

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class Plan:
    manifest: Manifest
    tier: str | None  # None: every tier (dry only)
    evals: list[PlannedEval]
    filtered_out: list[str] = field(default_factory=list)  # names of the tier's evals a filter left out
    filters: dict[str, list[str]] = field(default_factory=dict)

    @property
    def is_filtered(self) -> bool:
        return any(self.filters.values())

    def tier_names(self) -> set[str]:
        return {e.name for e in self.manifest.evals if self.tier is None or e.tier == self.tier}


def make_plan(manifest: Manifest, tier: str | None, evals: list[str], tags: list[str]) -> Plan:
    """Select the evals of ``tier`` (all tiers when None) that pass the filters."""
    if tier is not None and tier not in TIERS:
        raise UsageError(f"unknown tier {tier!r}; use one of {', '.join(TIERS)}")
    known = manifest.names()
    unknown = [n for n in evals if n not in known]
    if unknown:
        listing = ", ".join(known) if known else "(the manifest has no evals)"
        raise UsageError(f"--eval {unknown[0]}: no such eval in {manifest.path}; known evals: {listing}")
    in_tier = [e for e in manifest.evals if tier is None or e.tier == tier]
    if tier is not None:
        elsewhere = [n for n in evals if n not in {e.name for e in in_tier}]
        if elsewhere:
            other = next(e.tier for e in manifest.evals if e.name == elsewhere[0])
            raise UsageError(f"--eval {elsewhere[0]}: that eval is in tier {other}, not {tier}; run evalrun {other}")
    chosen: list[PlannedEval] = []
    left_out: list[str] = []
    for spec in in_tier:
        if (evals and spec.name not in evals) or (tags and not set(tags) & set(spec.tags)):
            left_out.append(spec.name)
        else:
            chosen.append(PlannedEval(spec=spec, dir=manifest.eval_dir(spec)))
    return Plan(
        manifest=manifest,
        tier=tier,
        evals=chosen,
        filtered_out=left_out,
        filters={"evals": list(evals), "tags": list(tags)},
    )
