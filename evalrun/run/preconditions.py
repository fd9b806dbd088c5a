"""Deciding, before any scorer starts, what may run: tier guards, probes, skip policy.

This module owns the step between the plan and the execution: a tier's
``require`` guard (unmet: the whole tier is refused, exit 2, no scorer starts),
each distinct probe of the planned evals run once and concurrently, and the skip
policy (``skips = "fail"`` on a tier or ``--no-skips``: a skip becomes a failure
with the same reason). A skip is a result with a reason, never a pass. Probes
get the environment scorers of their tier get (``evalrun.run.context.RunContext.probe_env``):
no provider key in t1/t2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from evalrun.errors import TierGuardError
from evalrun.manifest import Manifest
from evalrun.plan import PlannedEval

if TYPE_CHECKING:
    from evalrun.probes.run import ProbeResult


class Decision(NamedTuple):
    """Why one planned eval will not run, if it will not."""

    skip: str | None = None
    fail: str | None = None

    @property
    def runs(self) -> bool:
        return self.skip is None and self.fail is None


class Preconditions(NamedTuple):
    decisions: dict[str, Decision]  # eval -> why it will not run; an eval not named runs

    def for_eval(self, name: str) -> Decision:
        return self.decisions.get(name, Decision())


def tier_guard_problem(manifest: Manifest, tier: str, env: Mapping[str, str],
                       secrets: Iterable[str] | None = None) -> str | None:
    """Why the tier's ``require`` guard is unmet, or None."""
    required = manifest.tier(tier).require
    if not required:
        return None
    from evalrun.probes.run import run_probes  # local: a run with no probe never loads the probe runner

    results = run_probes([manifest.requirement(r) for r in required], env, manifest.root, secrets)
    unmet = [results[r].reason for r in required if not results[r].ok]
    return f"tier {tier} requires {', '.join(required)}: {'; '.join(unmet)}" if unmet else None


def check_tier_guard(manifest: Manifest, tier: str, env: Mapping[str, str],
                     secrets: Iterable[str] | None = None) -> None:
    """Refuse the whole tier when its ``require`` guard is unmet: no scorer starts."""
    problem = tier_guard_problem(manifest, tier, env, secrets)
    if problem:
        raise TierGuardError(f"{problem}; refusing to run the tier (set what it needs, or run another tier)")


def probe_evals(
    manifest: Manifest, evals: list[PlannedEval], env: Mapping[str, str], skips_fail: bool,
    secrets: Iterable[str] | None = None,
) -> Preconditions:
    """Run every distinct probe of the planned evals (and of their experiments) once, concurrently; decide each.

    An experiment's unmet requirement skips every eval of its column, loudly, naming the experiment.
    """
    wanted = {req: manifest.requirement(req) for p in evals for req in _requirements(p)}
    results: dict[str, ProbeResult] = {}
    if wanted:
        from evalrun.probes.run import run_probes  # local: a run with no probe never loads the probe runner

        results = run_probes(wanted.values(), env, manifest.root, secrets)
    decisions: dict[str, Decision] = {}
    for p in evals:
        reasons = [results[req].reason for req in p.spec.requires if not results[req].ok]
        column = p.column.requires if p.column is not None else []
        reasons += [f"experiment {p.experiment} needs {req}: {results[req].reason}" for req in column if not results[req].ok]
        if not reasons:
            continue
        reason = "; ".join(reasons)
        if skips_fail:
            decisions[p.name] = Decision(fail=f"would skip, and skips are failures here: {reason}")
        else:
            decisions[p.name] = Decision(skip=reason)
    return Preconditions(decisions=decisions)


def _requirements(planned: PlannedEval) -> list[str]:
    return [*planned.spec.requires, *(planned.column.requires if planned.column is not None else [])]


def skips_are_failures(manifest: Manifest, tier: str, no_skips: bool) -> bool:
    return no_skips or manifest.tier(tier).skips == "fail"


def ready_check(manifest: Manifest) -> Callable[[str, Mapping[str, str]], tuple[bool, str]]:
    """Services poll their ``ready`` requirement with evalrun's own probes."""

    def check(requirement: str, env: Mapping[str, str]) -> tuple[bool, str]:
        from evalrun.probes.run import check_probe  # local: only a service with a ready probe polls

        result = check_probe(manifest.requirement(requirement), env, manifest.root)
        return result.ok, result.reason

    return check
