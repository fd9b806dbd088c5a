"""``evalrun show EVAL [TIER]``: one eval of the tier's last run, with its model calls in order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import UsageError, file_label
from evalrun.plan import split_cell_name
from evalrun.reports_out.transcript import show_header, transcript_lines
from evalrun.results import load_results
from evalrun.session import Session


@dataclass(frozen=True)
class ShowRequest:
    """``evalrun show EVAL [TIER]``: the eval (or cell), its tier, and the results file to read."""

    name: str
    tier: str | None = None
    json_path: Path | None = None


def show_eval(request: ShowRequest, session: Session) -> int:
    name, tier, json_path = request.name, request.tier, request.json_path
    console, manifest = session.console, session.manifest
    base, _ = split_cell_name(name)
    spec = next((e for e in manifest.evals if e.name == base), None)
    if spec is None and json_path is None:
        listing = ", ".join(manifest.names()) or "(the manifest has no evals)"
        raise UsageError(f"show {name}: no such eval in {file_label(manifest.path)}; known evals: {listing}")
    tier = tier or (spec.tier if spec is not None else None)
    path = json_path or session.workspace.results(tier)
    if not path.exists():
        raise UsageError(f"show {name}: no results file at {file_label(path)}; run evalrun {tier} first")
    results = load_results(path)
    found = [r for r in results.evals if r.name == name or split_cell_name(r.name)[0] == name]
    if not found:
        raise UsageError(f"show {name}: not in the last {results.tier} run ({file_label(path)}, {results.started_at})")
    console.line(show_header(results.tier, results.started_at, file_label(path)))
    for result in found:
        for line in transcript_lines(result):
            console.line(line)
    return 0
