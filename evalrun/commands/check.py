"""``evalrun check``: validate the manifest and warn about machine-specific paths."""

from __future__ import annotations

from collections.abc import Mapping

from evalrun.absolute_paths import find_absolute_paths
from evalrun.baseline import baseline_path, load_baseline
from evalrun.errors import BaselineError, UsageError
from evalrun.run.execute import program_problem
from evalrun.run.model_calls import is_manifest_problem, upstream_problems
from evalrun.manifest import Manifest
from evalrun.plan import make_plan
from evalrun.reports_in.positional import find_positional
from evalrun.reports_out.command_lines import check_verdict, check_warning, missing_program, upstream_warning
from evalrun.reports_out.positional import positional_warning
from evalrun.session import Session


def check(session: Session) -> int:
    console, manifest, manifest_path = session.console, session.manifest, session.manifest_path
    warnings = find_absolute_paths(manifest)
    for line in warnings:
        console.warn(check_warning(line))
    for line in _positional_names(manifest):
        console.warn(line)
    missing = _missing_programs(manifest, session.environ)
    for line in missing:
        console.warn(check_warning(line))
    # Where t3's model calls would go: the manifest's own mistake is exit 2, as the run would refuse it; one of
    # this machine's environment (EVALRUN_UPSTREAM_*, the SDKs' base URLs) is a warning, as a missing program is.
    upstream = upstream_problems(manifest, session.environ)
    wrong = [p for p in upstream if is_manifest_problem(manifest, p)]
    for line in upstream:
        if line not in wrong:
            console.warn(check_warning(upstream_warning(line)))
    if wrong:
        raise UsageError(wrong[0])  # one line, exit 2, as `evalrun t3` would stop at it
    console.line(check_verdict(manifest_path, len(manifest.evals), len(warnings), len(missing)))
    return 0


def _missing_programs(manifest: Manifest, environ: Mapping[str, str]) -> list[str]:
    """Each eval whose program its run would not find on this machine (``pyhton``), once per eval.

    A warning, not an error: a program may be installed only where that tier runs (CI, the nightly machine).
    """
    lines: dict[str, str] = {}
    index = {spec.name: i for i, spec in enumerate(manifest.evals)}
    environ = dict(environ)
    for planned in make_plan(manifest, None, [], [], None).evals:
        spec = planned.spec
        if spec.name in lines or not (problem := program_problem(planned, environ)):
            continue
        lines[spec.name] = missing_program(manifest.path, index[spec.name], spec, problem)
    return list(lines.values())


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
