"""``evalrun merge``: combine shard results and decide as one run would (bites shards: as one bites run)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from evalrun.baseline import baseline_path, load_baseline
from evalrun.bites import bites_exit_code
from evalrun.errors import UsageError
from evalrun.merge import merge_results
from evalrun.run.context import RunContext
from evalrun.run.deliver import deliver, write
from evalrun.run.pipeline import judge
from evalrun.run.requests import Outputs
from evalrun.run.select import default_results_path
from evalrun.results import RunResults
from evalrun.session import Session
from evalrun.workspace import check_writable
from evalrun.reports_out.shards import merged_shards
from evalrun.reports_out.bites import merged_header, report_bites, show_bite


@dataclass(frozen=True)
class MergeRequest:
    """``evalrun merge RESULTS...``: the shards' results files and where the merged run is written."""

    paths: list[Path]
    tier: str | None = None
    json_path: Path | None = None
    strict: bool = False  # --strict-baseline
    junit: Path | None = None
    markdown: Path | None = None


def merge_shards(request: MergeRequest, session: Session) -> int:
    paths, tier, json_path, strict = request.paths, request.tier, request.json_path, request.strict
    junit, markdown = request.junit, request.markdown
    console, manifest = session.console, session.manifest
    junit = check_writable(junit, "--junit") if junit else None
    markdown = check_writable(markdown, "--markdown") if markdown else None
    merged = merge_results(paths, manifest, tier)
    if merged.kind == "bites":
        if strict:
            raise UsageError(
                "merge: --strict-baseline does not apply to bites shards (bites are never compared with the baseline);"
                " drop it"
            )
        return _merge_bites(merged, session, len(paths), json_path, junit, markdown)
    outputs = Outputs(
        results=check_writable(json_path or default_results_path(manifest, merged.tier), "--json"),
        junit=junit,
        markdown=markdown,
    )
    context = RunContext.build(session, merged.tier)  # the merged run's: judged and delivered as one run is
    judged = judge(merged, context, load_baseline(baseline_path(manifest, merged.tier)), strict=strict)
    for result in judged.evals:
        console.eval_finished(result)
    code = deliver(judged, context, outputs, source="merge")
    console.line(merged_shards(len(paths)))
    return code


def _merge_bites(merged: RunResults, session: Session, shards: int, json_path: Path | None, junit: Path | None,
                 markdown: Path | None) -> int:
    """Bites shards: the bites verdict, never compared with the baseline nor written to the history."""
    console = session.console
    outputs = Outputs(
        results=check_writable(json_path or session.workspace.bites_results(merged.tier), "--json"),
        junit=junit,
        markdown=markdown,
    )
    judged = replace(merged, exit_code=int(bites_exit_code(merged.evals, merged.interrupted)))
    console.line(merged_header(judged.tier, len(judged.evals), shards))
    for result in judged.evals:
        show_bite(console, result)
    write(judged, outputs, RunContext.build(session, judged.tier))
    report_bites(judged, console, outputs.results, outputs.junit, outputs.markdown)
    return int(judged.exit_code or 0)
