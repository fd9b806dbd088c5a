"""``evalrun dry``'s listing: the planned runs, what they need and what they would meet, in words.

The dry command decides (the plan, what the probes found, which tier would be
refused, what each model eval's fixtures hold, which program its run would not
find) and hands each planned eval over as a ``DryEval``; every line of the
listing is worded here.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalrun.errors import file_label
from evalrun.reports_out import run_notes
from evalrun.reports_out.describe import describe_budget, program_where
from evalrun.reports_out.matrix import dry_matrix, plain_lines
from evalrun.reports_out.terminal import Console
from evalrun.text import plural

if TYPE_CHECKING:
    from evalrun.manifest.schema import Budget
    from evalrun.models.fixture_state import FixtureState
    from evalrun.plan import Plan, PlannedEval
    from evalrun.repeats import RepeatSettings
    from evalrun.selection.changed import SelectionReason


@dataclass(frozen=True)
class DryEval:
    """One planned eval and what the dry command found out about it."""

    planned: PlannedEval
    word: str  # "run"; "refused" (its tier would be); "unprobed" (requires, --no-probe); "skip" (a probe)
    skip: str | None = None  # the probe's reason, where ``word`` is "skip"
    missing: str | None = None  # the program its run would not find (``program_problem``)
    fixtures: FixtureState | None = None  # where it calls a model
    repeat: RepeatSettings | None = None
    bites: tuple[str, ...] = ()  # what each of its bites breaks (``describe_bite``), in the manifest's order


@dataclass(frozen=True)
class DryListing:
    """The whole plan: its scope, the tiers' model budgets and refusals, each planned eval."""

    tier: str | None  # None: all tiers
    plan: Plan
    evals: Sequence[DryEval]
    budgets: Sequence[tuple[str, Budget | None]] = ()  # each tier whose planned evals call a model: its cap
    refused: Mapping[str, str] = field(default_factory=dict)  # tier -> why it would be refused


def selection_lines(reasons: Sequence[SelectionReason]) -> list[str]:
    """``a: selected: evals/a/score.py changed``: why ``--changed-since`` (or a shard) kept or left out each eval."""
    return [f"{r.eval}: {'selected' if r.selected else 'left out'}: {selection_reason(r)}" for r in reasons]


def selection_reason(reason: SelectionReason) -> str:
    """``evals/a/score.py and 2 more changed (paths: lib/**)``, ``manifest.toml changed: everything is selected``."""
    files = reason.files[0] + (f" and {len(reason.files) - 1} more" if len(reason.files) > 1 else "") \
        if reason.files else ""
    return {
        "manifest": f"{files} changed: everything is selected",
        "own code": f"{files} changed (evalrun's own code): everything is selected",
        "folder": f"{files} changed",
        "paths": f"{files} changed (paths: {reason.pattern})",
        "baseline broken": f"{files} changed and does not load: selected to surface the error",
        "baseline": f"{files} changed: its entry for this eval differs from {reason.ref}",
    }.get(reason.kind, f"not changed since {reason.ref}")


def nothing_selected(tier: str | None, plan: Plan) -> str:
    return run_notes.nothing_selected(_scope(tier), plan)


def print_dry(listing: DryListing, console: Console) -> None:
    """The listing: the header, the budgets, the refused tiers, each eval, the rule skips, the matrix."""
    plan = listing.plan
    console.line(f"planned in {_scope(listing.tier)}: {plural(len(plan.evals), 'eval')} (nothing is run)")
    for tier, budget in listing.budgets:
        what = " (the run's model calls, all evals together)" if budget is not None else (
            " (live model calls are not capped)" if tier == "t3" else "")
        console.line(f"tier {tier} budget: {describe_budget(budget)}{what}")
    for tier, problem in listing.refused.items():
        console.warn(f"tier {tier} would be refused: {problem}")
    cells: list[tuple[str, str | None, str, str | None]] = []  # eval, experiment, word, why (the matrix)
    for entry in listing.evals:
        cells.append((entry.planned.spec.name, entry.planned.experiment, entry.word, _why(entry)))
        for text in eval_lines(entry):
            console.line(text)
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


def eval_lines(entry: DryEval) -> list[str]:
    """``a: would run``, then the eval's settings, bites, model calls and experiment, indented."""
    p, s = entry.planned, entry.planned.spec
    verdict = _why(entry) or "would run"
    fixtures = entry.fixtures
    if entry.word == "run" and fixtures is not None and fixtures.mode == "replay" and not (fixtures.recorded or fixtures.named):
        verdict = f"would run, and FAIL: its model calls have no recordings in {_where(fixtures)}"
    if entry.missing:  # the run would fail on it before anything else
        verdict = f"would run, and FAIL: {entry.missing} ({program_where(s)})"
    repeat = entry.repeat
    if repeat is not None and repeat.repeats:  # "would run × 10 (floor 0.8, stop when decided)"
        verdict += f" × {repeat.count} (floor {repeat.floor:g}{', stop when decided' if repeat.stop else ''})"
    argv = " ".join(s.run) if s.shell else shlex.join(s.run)
    lines = [
        f"{p.name}: {verdict}",
        f"  tier {s.tier}, dir {s.dir}, timeout {s.timeout:g} s, tags {', '.join(s.tags) or '-'}",
        f"  run: {argv}" + ("  (shell)" if s.shell else ""),
    ]
    if s.requires:
        lines.append(f"  requires: {', '.join(s.requires)}")
    if s.services:
        lines.append(f"  services: {', '.join(s.services)}")
    if s.budget is not None:
        lines.append(f"  budget: {describe_budget(s.budget)} (this eval's calls)")
    for bite, breaks in zip(s.bites, entry.bites):  # evalrun bites: what it breaks and what must go red
        lines.append(f"  bite {bite.name}: {breaks}; must fail: {', '.join(bite.fails)}")
    if fixtures is not None:
        lines += [f"  {text}" for text in model_lines(fixtures, s.name)]
    if p.column is not None:
        changes = ", ".join([*p.column.env, *([f"model {p.column.model}"] if p.column.model else [])]) or "nothing"
        lines.append(f"  experiment {p.experiment}: changes {changes}"
                     + (f"; requires {', '.join(p.column.requires)}" if p.column.requires else "")
                     + (f"; budget {describe_budget(p.column.budget)} (the column's calls)" if p.column.budget else ""))
    return lines


def _why(entry: DryEval) -> str | None:
    """Why the eval would not run, for its line and the matrix's note; None when it would."""
    if entry.word == "refused":
        return f"would not run: tier {entry.planned.spec.tier} would be refused"
    if entry.word == "unprobed":
        return "not probed (--no-probe)"
    if entry.word == "skip":
        return f"would SKIP: {entry.skip}"
    return None


def _scope(tier: str | None) -> str:
    return tier or "all tiers"


def _where(state: FixtureState) -> str:
    return f"{file_label(state.folder / state.session)}/"


def _calls(count: int) -> str:
    return plural(count, "recorded call")


def model_lines(state: FixtureState, name: str) -> list[str]:
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
        lines = [f"model: live to {run_notes.describe_upstreams(state.upstreams)}",
                 f"  with --record: records into {_where(state)}{owner} ({recorded})"]
    if named:
        lines.append(f"  sessions its calls may name (X-Evalrun-Session), in {file_label(state.folder)}/: {named}")
    for label, count in state.elsewhere:
        lines.append(f"  recorded for another experiment: {label}/{state.session}/ ({_calls(count)})"
                     if label.startswith("@") else f"  recorded without an experiment: fixtures/{state.session}/ ({_calls(count)})")
    return lines
