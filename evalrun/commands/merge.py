"""``evalrun merge``: combine shard results and decide as one run would."""

from __future__ import annotations

import os
from pathlib import Path

from evalrun.baseline import baseline_path, load_baseline
from evalrun.merge import merge_results
from evalrun.pipeline import Outputs, default_results_path, deliver, judge, load
from evalrun.secrets import known_secrets
from evalrun.workspace import check_writable
from evalrun.reports_out.terminal import Console


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
    manifest = load(manifest_path)
    junit = check_writable(junit, "--junit") if junit else None
    markdown = check_writable(markdown, "--markdown") if markdown else None
    merged = merge_results(paths, manifest, tier)
    outputs = Outputs(
        results=check_writable(json_path or default_results_path(manifest, merged.tier), "--json"),
        junit=junit,
        markdown=markdown,
    )
    judged = judge(merged, manifest, load_baseline(baseline_path(manifest, merged.tier)), strict=strict)
    for result in judged.evals:
        console.eval_finished(result)
    secrets = known_secrets(os.environ, manifest.models.key_vars).values
    code = deliver(judged, manifest, outputs, console, os.environ, secrets=secrets, source="merge")
    console.line(f"merged {len(paths)} shard results")
    return code
