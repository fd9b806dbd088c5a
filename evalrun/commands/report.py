"""``evalrun report --html PATH [TIER] [--last N]``: the latest run and the trends of the last runs, as one file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import UsageError, file_label
from evalrun.reports_out.command_lines import chosen_tier, html_written
from evalrun.reports_out.html import runs_for_report, write_html_report
from evalrun.results import load_results
from evalrun.session import Session


@dataclass(frozen=True)
class ReportRequest:
    """``evalrun report --html PATH [TIER] [--last N]``."""

    html: Path | None
    tier: str | None = None
    last: int = 30


def write_report(request: ReportRequest, session: Session) -> int:
    tier, html, last = request.tier, request.html, request.last
    if html is None:
        raise UsageError("report: pass --html PATH (the file to write)")
    console, manifest, environ = session.console, session.manifest, session.environ
    chosen = ""
    if tier is None:  # the tier of the latest run in the history
        latest, _ = runs_for_report(manifest, None, 1, environ, strict=True, locate=session.locate_history)
        tier = latest[-1].tier if latest else None
        if tier:
            chosen = chosen_tier(tier)
    runs, notes = runs_for_report(manifest, tier, last, environ, strict=True, locate=session.locate_history) if tier else ([], [])
    if not runs:
        fallback = session.workspace.results(tier or "t1")
        if not fallback.exists():
            raise UsageError(
                f"no runs{' of ' + tier if tier else ''} in the history and no {file_label(fallback)}; "
                f"run evalrun {tier or 't1'} first"
            )
        runs, more = runs_for_report(manifest, tier, last, environ, load_results(fallback), strict=True,
                                     secrets=session.secrets.values, locate=session.locate_history)
        notes = [*notes, *more]
    for note in notes:
        console.warn(note)
    try:
        write_html_report(html, runs, [chosen, *notes] if chosen else notes)
    except OSError as exc:
        raise UsageError(f"--html {html}: cannot write: {exc.strerror or exc}") from None
    console.line(html_written(html, runs[-1].tier, len(runs)))
    if chosen:
        console.line(chosen)
    return 0
