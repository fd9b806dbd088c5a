"""``evalrun dry``: print the planned runs, probe what they need, run no scorer."""

from __future__ import annotations

import shlex
from pathlib import Path

from evalrun.bites import describe_bite
from evalrun.run.context import RunContext
from evalrun.errors import ExitCode, UsageError, file_label
from evalrun.run.execute import program_problem
from evalrun.manifest import Manifest
from evalrun.run.fixture_state import FixtureState, fixture_state
from evalrun.run.requests import RunRequest
from evalrun.run.select import select
from evalrun.plan import make_plan
from evalrun.run.preconditions import Preconditions, probe_evals, tier_guard_problem
from evalrun.repeats import settings_for
from evalrun.reports_out.describe import describe_budget, describe_filters, program_where
from evalrun.reports_out.matrix import dry_matrix, plain_lines
from evalrun.session import Session
from evalrun.text import plural
from evalrun.workspace import workspace_of


def dry(
    manifest_path: Path,
    tier: str | None,
    evals: list[str],
    tags: list[str],
    session: Session,
    probe: bool = True,
    changed_since: str | None = None,
    shard: str | None = None,
    experiments: list[str] | None = None,
) -> int:
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
        for reason in changed.reasons:
            console.line(f"{reason.eval}: {'selected' if reason.selected else 'left out'}: {reason.reason}")
    scope = tier or "all tiers"
    if not plan.evals:
        console.warn(f"nothing selected to run in {scope} ({describe_filters(plan)})")
        return int(ExitCode.NOTHING_SELECTED)
    tiers = [tier] if tier else sorted({p.spec.tier for p in plan.evals})
    # Each tier's probes see what its scorers would: no provider key in t1/t2.
    probe_envs = {t: RunContext.build(session, t).probe_env() for t in tiers} if probe else {}
    pre = Preconditions()
    if probe:
        for t in tiers:
            of_tier = [p for p in plan.evals if p.spec.tier == t]
            found = probe_evals(manifest, of_tier, probe_envs[t], skips_fail=False, secrets=session.secrets.values)
            pre.decisions.update(found.decisions)
    console.line(f"planned in {scope}: {plural(len(plan.evals), 'eval')} (nothing is run)")
    for t in tiers:  # the cap on the tier's model calls, where any planned eval of it calls a model
        if any(p.spec.tier == t and manifest.uses_model(p.spec) for p in plan.evals):
            budget = manifest.tier(t).budget
            what = " (the run's model calls, all evals together)" if budget is not None else (
                " (live model calls are not capped)" if t == "t3" else "")
            console.line(f"tier {t} budget: {describe_budget(budget)}{what}")
    refused: dict[str, str] = {}
    for t in tiers:
        problem = tier_guard_problem(manifest, t, probe_envs[t], session.secrets.values) if probe else None
        if problem:
            refused[t] = problem
            console.warn(f"tier {t} would be refused: {problem}")
    cells: list[tuple[str, str | None, str, str | None]] = []  # eval, experiment, word, why (the matrix)
    last = {t: _last_messages(manifest, t) for t in tiers}
    for p in plan.evals:
        s = p.spec
        argv = " ".join(s.run) if s.shell else shlex.join(s.run)
        decision = pre.for_eval(p.name)
        requires = [*s.requires, *(p.column.requires if p.column is not None else [])]
        if s.tier in refused:
            word, why = "refused", f"would not run: tier {s.tier} would be refused"
        elif not probe and requires:
            word, why = "unprobed", "not probed (--no-probe)"
        elif probe and decision.skip:
            word, why = "skip", f"would SKIP: {decision.skip}"
        else:
            word, why = "run", None
        fixtures = fixture_state(manifest, p, environ, last[s.tier]) if manifest.uses_model(s) else None
        cells.append((s.name, p.experiment, word, why))
        verdict = why or "would run"
        if word == "run" and fixtures is not None and fixtures.mode == "replay" and not (fixtures.recorded or fixtures.named):
            verdict = f"would run, and FAIL: its model calls have no recordings in {_where(fixtures)}"
        missing = program_problem(p, environ) if word == "run" else None
        if missing:  # the run would fail on it before anything else
            verdict = f"would run, and FAIL: {missing} ({program_where(s)})"
        repeat = settings_for(manifest, s)
        if repeat.repeats:  # "would run × 10 (floor 0.8, stop when decided)"
            verdict += f" × {repeat.count} (floor {repeat.floor:g}{', stop when decided' if repeat.stop else ''})"
        console.line(f"{p.name}: {verdict}")
        console.line(f"  tier {s.tier}, dir {s.dir}, timeout {s.timeout:g} s, tags {', '.join(s.tags) or '-'}")
        console.line(f"  run: {argv}" + ("  (shell)" if s.shell else ""))
        if s.requires:
            console.line(f"  requires: {', '.join(s.requires)}")
        if s.services:
            console.line(f"  services: {', '.join(s.services)}")
        if s.budget is not None:
            console.line(f"  budget: {describe_budget(s.budget)} (this eval's calls)")
        for bite in s.bites:  # evalrun bites: what it breaks and what must go red
            console.line(f"  bite {bite.name}: {describe_bite(bite)}; must fail: {', '.join(bite.fails)}")
        if fixtures is not None:
            for text in _model_lines(fixtures, s.name):
                console.line(f"  {text}")
        if p.column is not None:
            changes = ", ".join([*p.column.env, *([f"model {p.column.model}"] if p.column.model else [])]) or "nothing"
            console.line(f"  experiment {p.experiment}: changes {changes}"
                         + (f"; requires {', '.join(p.column.requires)}" if p.column.requires else "")
                         + (f"; budget {describe_budget(p.column.budget)} (the column's calls)" if p.column.budget else ""))
    for name, reason in plan.rule_skips.items():
        console.line(f"{name}: not planned: {reason}")
    matrix = dry_matrix(cells, plan.rule_skips)
    if matrix is not None:
        grid, notes = matrix
        console.line(f"matrix: {plural(len(grid) - 1, 'eval')} × {len(grid[0]) - 1} experiments")
        for text in plain_lines(grid):
            console.line(f"  {text}")
        for note in notes:
            console.line(f"  {note}")
    if plan.filtered_out:
        console.line(f"filtered out: {', '.join(plan.filtered_out)}")
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


def _where(state: FixtureState) -> str:
    return f"{file_label(state.folder / state.session)}/"


def _calls(count: int) -> str:
    return plural(count, "recorded call")


def _model_lines(state: FixtureState, name: str) -> list[str]:
    """``model: replay from evals/x/fixtures/x/: 3 recorded calls ...``: what the eval's model calls would meet."""
    owner = f" (the fixtures of {state.owner})" if state.owner != name else ""
    record_with = (f"record them with: evalrun t3 --record -e {state.recorders[0]}" if state.recorders
                   else f'no t3 eval records them: give one fixtures_for = "{state.owner}"')
    named = ", ".join(f"{session} ({count})" for session, count in state.named)
    if state.mode == "replay":
        if state.recorded or state.named:
            fixtures = _calls(state.recorded)
            if state.unplayed:
                fixtures += f"; the last run left {state.unplayed} unplayed (re-record, or delete them)"
        else:
            fixtures = f"missing: nothing recorded in {file_label(state.folder)}/; {record_with}"
        lines = [f"model: replay from {_where(state)}{owner}: {fixtures}"]
    else:
        recorded = _calls(state.recorded) if state.recorded else "nothing recorded yet"
        lines = [f"model: live to {state.upstream}",
                 f"  with --record: records into {_where(state)}{owner} ({recorded})"]
    if named:
        lines.append(f"  sessions its calls may name (X-Evalrun-Session), in {file_label(state.folder)}/: {named}")
    for label, count in state.elsewhere:
        lines.append(f"  recorded for another experiment: {label}/{state.session}/ ({_calls(count)})"
                     if label.startswith("@") else f"  recorded without an experiment: fixtures/{state.session}/ ({_calls(count)})")
    return lines
