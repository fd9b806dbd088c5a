"""``evalrun dry``: print the planned runs, probe what they need, run no scorer."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evalrun.bites import describe_bite
from evalrun.run.context import RunContext
from evalrun.errors import ExitCode, UsageError
from evalrun.run.execute import program_problem
from evalrun.manifest import Manifest
from evalrun.run.fixtures import fixture_state
from evalrun.run.requests import RunRequest
from evalrun.run.select import select
from evalrun.plan import make_plan
from evalrun.run.preconditions import Preconditions, probe_evals, tier_guard_problem
from evalrun.repeats import settings_for
from evalrun.reports_out.dry import DryEval, DryListing, nothing_selected, print_dry, selection_lines
from evalrun.session import Session
from evalrun.workspace import workspace_of


@dataclass(frozen=True)
class DryRequest:
    """``evalrun dry [TIER]``: what to plan, and whether to probe."""

    manifest_path: Path
    tier: str | None = None  # None: every tier
    evals: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    probe: bool = True  # False: --no-probe
    changed_since: str | None = None
    shard: str | None = None
    experiments: list[str] = field(default_factory=list)


def dry(request: DryRequest, session: Session) -> int:
    manifest_path, tier, evals, tags = request.manifest_path, request.tier, request.evals, request.tags
    probe, changed_since, shard, experiments = request.probe, request.changed_since, request.shard, request.experiments
    console, manifest, environ = session.console, session.manifest, dict(session.environ)
    changed = None
    if (changed_since or shard) and tier is None:
        raise UsageError("--changed-since and --shard select within one tier; name it: evalrun dry t1 ...")
    if tier is not None:
        request = RunRequest(
            manifest_path, tier, evals, tags, jobs=1, changed_since=changed_since, shard=shard,
            experiments=list(experiments or []),
        )
        plan, changed = select(request, session)  # a shard says which and what balanced it
    else:
        plan = make_plan(manifest, tier, evals, tags, experiments)
    if changed is not None:
        for text in selection_lines(changed.reasons):
            console.line(text)
    if not plan.evals:
        console.warn(nothing_selected(tier, plan))
        return int(ExitCode.NOTHING_SELECTED)
    tiers = [tier] if tier else sorted({p.spec.tier for p in plan.evals})
    # Each tier's probes see what its scorers would: no provider key in t1/t2.
    probe_envs = {t: RunContext.build(session, t).probe_env() for t in tiers} if probe else {}
    pre = Preconditions({})
    if probe:
        for t in tiers:
            of_tier = [p for p in plan.evals if p.spec.tier == t]
            found = probe_evals(manifest, of_tier, probe_envs[t], skips_fail=False, secrets=session.secrets.values)
            pre.decisions.update(found.decisions)
    # The cap on each tier's model calls, where any planned eval of it calls a model.
    budgets = [(t, manifest.tier(t).budget) for t in tiers
               if any(p.spec.tier == t and manifest.uses_model(p.spec) for p in plan.evals)]
    refused: dict[str, str] = {}
    for t in tiers:
        problem = tier_guard_problem(manifest, t, probe_envs[t], session.secrets.values) if probe else None
        if problem:
            refused[t] = problem
    last = {t: _last_messages(manifest, t) for t in tiers}
    found_out: list[DryEval] = []
    for p in plan.evals:
        s = p.spec
        decision = pre.for_eval(p.name)
        requires = [*s.requires, *(p.column.requires if p.column is not None else [])]
        if s.tier in refused:
            word = "refused"
        elif not probe and requires:
            word = "unprobed"
        elif probe and decision.skip:
            word = "skip"
        else:
            word = "run"
        found_out.append(DryEval(
            planned=p, word=word, skip=decision.skip if word == "skip" else None,
            missing=program_problem(p, environ) if word == "run" else None,
            fixtures=fixture_state(manifest, p, environ, last[s.tier]) if manifest.uses_model(s) else None,
            repeat=settings_for(manifest, s), bites=tuple(describe_bite(bite) for bite in s.bites),
        ))
    print_dry(DryListing(tier, plan, found_out, budgets, refused), console)
    return int(ExitCode.OK)


def _last_messages(manifest: Manifest, tier: str) -> dict[str, str]:
    """Each eval's message in the tier's last results file (what it left unplayed), or nothing."""
    from evalrun.errors import ResultsError
    from evalrun.results import load_results

    path = workspace_of(manifest.root).results(tier)
    try:
        return {r.name: r.message or "" for r in load_results(path).evals} if path.is_file() else {}
    except ResultsError:  # an unreadable last run only means no "unplayed" figure
        return {}

