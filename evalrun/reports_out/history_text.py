"""``evalrun history``'s tables: the runs, and one check's status per run; its colours are chosen here."""

from __future__ import annotations

from evalrun.history.records import StoredRun
from evalrun.history.series import CheckSeries, last_failure
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
    if streak is None or streak.fixed_by is not None:
        console.line(f"  passing now ({passed} of {len(present)} runs passed{'; flaky' if series.flaky else ''})")


def _time(run: StoredRun) -> str:
    return run.started_at[:19].replace("T", " ")
