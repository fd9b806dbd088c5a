"""``evalrun history``'s tables: the runs, and one check's status per run; its colours are chosen here."""

from __future__ import annotations

from pathlib import Path

from evalrun.history.records import StoredRun
from evalrun.history.series import ABSENT, CheckSeries, last_failure
from evalrun.reports_out.terminal import Console
from evalrun.text import plural


def print_runs(runs: list[StoredRun], console: Console) -> None:
    """One line per run, newest last."""
    header = f"{'time':<19}  {'run':<27}  {'tier':<4}  {'commit':<11}  {'exit':>4}  {'passed':>6}  {'failed':>6}  {'skipped':>7}"
    console.line(header)
    for run in runs:
        c = run.counts()
        exit_code = "-" if run.exit_code is None else str(run.exit_code)
        source = "" if run.source == "run" else f"  ({run.source})"
        console.line(f"{_time(run):<19}  {run.run_id:<27}  {run.tier:<4}  {run.short_commit:<11}  {exit_code:>4}  "
                     f"{c['passed']:>6}  {c['failed']:>6}  {c['skipped']:>7}{source}")


def print_series(series: CheckSeries, console: Console) -> None:
    """A check's status in each run, and since when it fails (red) or that a later run fixed it (yellow)."""
    console.line(f"{series.eval}: {series.check}")
    for p in series.points:
        assertions = "-" if p.assertions is None else str(p.assertions)
        noun = "assertions" if p.assertions is None else plural(p.assertions, "assertion").partition(" ")[2]
        console.line(f"  {_time(p.run):<19}  {p.run.run_id:<27}  {p.run.short_commit:<11}  {p.status:<6}  "
                     f"{assertions:>3} {noun}")
    present = series.present
    passed = sum(p.status == "passed" for p in present)
    streak = last_failure(series)
    if streak is not None:
        console.line(f"  {streak.describe()}", "red" if streak.fixed_by is None else "yellow")
    flaky = '; flaky' if series.flaky else ''
    last = series.points[-1] if series.points else None
    if last is not None and last.status == ABSENT:
        # The latest run did not run this check (the eval errored, was skipped, or was not in it): "passing now"
        # would speak for a run that never checked; say what the latest run was.
        ev = next((e for e in last.run.evals if e.name == series.eval), None)
        why = f"{series.eval} {ev.status}" if ev is not None else f"{series.eval} was not in it"
        console.line(f"  latest run {last.run.run_id} ({_time(last.run)}): the check did not run ({why}); "
                     f"before it, {passed} of {len(present)} runs passed{flaky}", "yellow")
    elif streak is None or streak.fixed_by is not None:
        console.line(f"  passing now ({passed} of {len(present)} runs passed{flaky})")


def _time(run: StoredRun) -> str:
    return run.started_at[:19].replace("T", " ")


def no_runs(tier: str | None, shown: str) -> str:
    """``no runs of t1 in the history yet (.evalrun/history.sqlite)``."""
    return f"no runs{' of ' + tier if tier else ''} in the history yet ({shown})"


def imported(path: Path, run_id: str, new: bool) -> str:
    """``imported results.json (20260101T...)``, or ``already in the history: ...`` where the run was kept before."""
    return f"{'imported' if new else 'already in the history:'} {path} ({run_id})"
