"""``evalrun check``: validate the manifest and warn about machine-specific paths."""

from __future__ import annotations

from pathlib import Path

from evalrun.absolute_paths import find_absolute_paths
from evalrun.baseline import baseline_path, load_baseline
from evalrun.errors import BaselineError
from evalrun.manifest import Manifest
from evalrun.pipeline import load
from evalrun.reports_in.positional import find_positional
from evalrun.reports_out.positional import positional_warning
from evalrun.reports_out.terminal import Console
from evalrun.text import plural


def check(*, manifest_path: Path, console: Console) -> int:
    manifest = load(manifest_path)
    warnings = find_absolute_paths(manifest)
    for line in warnings:
        console.warn(f"warning: {line}")
    for line in _positional_names(manifest):
        console.warn(line)
    n = len(manifest.evals)
    console.line(
        f"{manifest_path}: valid, {plural(n, 'eval')}; "
        + (plural(len(warnings), "absolute path warning") if warnings else "no absolute paths of this machine")
    )
    return 0


def _positional_names(manifest: Manifest) -> list[str]:
    """A warning per baselined eval whose check names are positions (a broken baseline is the run's to report)."""
    lines = []
    for tier in manifest.tiers:
        try:
            baseline = load_baseline(baseline_path(manifest, tier))
        except BaselineError:
            continue
        for eval_name, checks in sorted((baseline or {}).items()):
            if (found := find_positional(checks)) is not None:
                lines.append(positional_warning(f"{tier} {eval_name}", found))
    return lines
