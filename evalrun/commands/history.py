"""``evalrun history [TIER] [--eval E] [--check C] [--last N] [--json]`` and ``evalrun history import RESULTS...``."""

from __future__ import annotations

from dataclasses import dataclass
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from evalrun.errors import UsageError, file_label
from evalrun.history.records import GitInfo, StoredRun, make_record
from evalrun.history.series import CheckSeries, check_series, in_own_tier, last_failure, ordered_for_attention
from evalrun.history.backends import use_store
from evalrun.history.store import HistoryStore
from evalrun.results import load_run_results
from evalrun.reports_out.history_text import imported, no_runs, print_runs, print_series
from evalrun.session import Session

T = TypeVar("T")


def _using(session: Session, action: Callable[[HistoryStore], T]) -> T:
    """``action`` on the history store, bounded; one-line HistoryError (exit 2) when it cannot be used."""
    location = session.locate_history()
    if location is None:
        raise UsageError(f"{file_label(session.manifest.path)}: history is off ([history] enabled = false); turn it on to use it")
    return use_store(location, action)


@dataclass(frozen=True)
class HistoryRequest:
    """``evalrun history [TIER]``: which runs, narrowed to an eval or a check, as a table or JSON."""

    tier: str | None = None
    eval_name: str | None = None
    check: str | None = None
    last: int = 20
    as_json: bool = False
    shards: bool = False


@dataclass(frozen=True)
class ImportRequest:
    """``evalrun history import RESULTS...``."""

    paths: list[Path]


def show_history(request: HistoryRequest, session: Session) -> int:
    tier, eval_name, check, last = request.tier, request.eval_name, request.check, request.last
    as_json, shards = request.as_json, request.shards
    console = session.console
    location = session.locate_history()
    if location is not None and location.kind == "sqlite" and not Path(location.target).exists():
        runs, shown = [], location.shown  # reading creates nothing
    else:
        runs = _using(session, lambda store: store.runs(tier, last, shards))
        shown = location.shown if location is not None else ""
    narrowed = eval_name is not None or check is not None
    series = ordered_for_attention(in_own_tier(check_series(runs, eval_name, check))) if narrowed else []
    if narrowed and runs and not series:
        what = " ".join(filter(None, [f"--eval {eval_name}" if eval_name else "", f"--check {check}" if check else ""]))
        raise UsageError(f"{what}: no such check in the last {len(runs)} runs{' of ' + tier if tier else ''}")
    if as_json:
        # ASCII JSON: every control and line break in a stored name is a JSON escape, so each line is inert.
        document = json.dumps({"history": shown, "runs": [_run_json(r) for r in runs],
                               "checks": [_series_json(s) for s in series]}, indent=2, ensure_ascii=True)
        for line in document.split("\n"):
            console.line(line)
        return 0
    if not runs:
        console.note(no_runs(tier, shown))
        return 0
    if narrowed:
        for s in series:
            print_series(s, console)
    else:
        print_runs(runs, console)
    return 0


def import_results(request: ImportRequest, session: Session) -> int:
    """Load results files into the history; every file is read and checked before anything is written."""
    paths = request.paths
    if not paths:
        raise UsageError("history import: name at least one results file")
    console = session.console
    secrets = set(session.secrets.values)
    use = "bites runs are not kept in the history; import the results of runs"
    records = [(path, make_record(load_run_results(path, use), GitInfo(), "import", secrets)) for path in paths]
    added = _using(session, lambda store: [store.append(record) for _, record in records])
    for (path, record), new in zip(records, added):
        console.line(imported(path, record.run_id, new))
    return 0


def _run_json(run: StoredRun) -> dict[str, Any]:
    return {"run_id": run.run_id, "tier": run.tier, "started_at": run.started_at, "source": run.source,
            "commit": run.git_commit, "branch": run.git_branch, "dirty": run.git_dirty, "exit_code": run.exit_code,
            **run.counts()}


def _series_json(series: CheckSeries) -> dict[str, Any]:
    since = last_failure(series)
    return {
        "eval": series.eval, "check": series.check, "pass_rate": series.pass_rate, "flaky": series.flaky,
        "newly_failing": series.newly_failing,
        "failing": series.failing,
        "last_failure": None if since is None else {
            "first_bad_run_id": since.first_bad.run_id, "first_bad_commit": since.first_bad.git_commit,
            "last_good_run_id": since.last_good.run_id if since.last_good else None,
            "last_good_commit": since.last_good.git_commit if since.last_good else None,
            "fixed_by_run_id": since.fixed_by.run_id if since.fixed_by else None,
            "fixed_by_commit": since.fixed_by.git_commit if since.fixed_by else None,
        },
        "points": [{"run_id": p.run.run_id, "status": p.status, "assertions": p.assertions} for p in series.points],
    }
