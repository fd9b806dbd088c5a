"""``evalrun check``: validate the manifest and warn about machine-specific paths."""

from __future__ import annotations

from pathlib import Path

from evalrun.absolute_paths import find_absolute_paths
from evalrun.pipeline import load
from evalrun.reports_out.terminal import Console


def check(*, manifest_path: Path, console: Console) -> int:
    manifest = load(manifest_path)
    warnings = find_absolute_paths(manifest)
    for line in warnings:
        console.warn(f"warning: {line}")
    n = len(manifest.evals)
    console.line(
        f"{manifest_path}: valid, {n} eval{'s' if n != 1 else ''}; "
        + (f"{len(warnings)} absolute path warning{'s' if len(warnings) != 1 else ''}" if warnings else "no absolute paths of this machine")
    )
    return 0
