"""``evalrun merge``: combine shard results and decide as one run would."""

from __future__ import annotations

import os
from pathlib import Path

from evalrun.commands.run import load_checked_manifest, report_run, results_path, update_command, write_ci_reports
from evalrun.console import Console
from evalrun.history import record_run
from evalrun.merge import finish_merged, merge_results
from evalrun.plan import make_plan
from evalrun.results import write_results


def merge_shards(
    *,
    paths: list[Path],
    manifest_path: Path,
    tier: str | None,
    json_path: Path | None,
    strict: bool,
    junit: Path | None,
    markdown: Path | None,
    console: Console,
) -> int:
    manifest = load_checked_manifest(manifest_path)
    merged = merge_results(paths, manifest, tier)
    merged = finish_merged(merged, manifest, strict, update_command(manifest, merged.tier))
    out = results_path(manifest, merged.tier, json_path)
    write_results(merged, out)
    if warning := record_run(manifest, merged, os.environ, source="merge"):
        console.warn(warning)
    for result in merged.evals:
        console.eval_finished(result)
    report_run(merged, make_plan(manifest, merged.tier, [], []), console)
    console.line(f"merged {len(paths)} shard results: {out}")
    write_ci_reports(merged, junit, markdown, console)
    return int(merged.exit_code or 0)
