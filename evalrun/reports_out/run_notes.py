"""The lines a run prints on its way (``evalrun.run``): what it starts, where it runs from, what it could not write.

The run decides; these words say it. The closing summary is ``summary.py``, the
header of the network's isolation ``describe.network_line``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evalrun.models.upstreams import PROVIDERS, Upstream
from evalrun.plan import Plan
from evalrun.reports_out.describe import describe_filters

if TYPE_CHECKING:
    from evalrun.leftovers import Leftover
    from evalrun.selection.last_failed import LastFailedSelection
    from evalrun.services.manager import StoppedService


def nothing_selected(scope: str, plan: Plan) -> str:
    """``nothing selected to run in t1 (-e nope)``: the run (and ``evalrun dry``) found no eval to run."""
    return f"nothing selected to run in {scope} ({describe_filters(plan)})"


def last_failed_note(selection: LastFailedSelection) -> str:
    """``--last-failed``: what it kept, or why every selected eval runs."""
    tier, source = selection.tier, selection.source
    if not selection.readable:
        return f"--last-failed: {source}; running every selected eval of {tier}"
    if not selection.kept:
        return (f"--last-failed: nothing failed or regressed in the last {tier} run ({source}); "
                f"running every selected eval of {tier}")
    return (f"--last-failed: {len(selection.kept)} of {selection.planned} evals failed or regressed in the last {tier} "
            f"run ({source}): {', '.join(selection.kept)}")


def model_calls_through(mode: str, proxy_url: str) -> str:
    """``model calls: replay through http://127.0.0.1:PORT``: the run's proxy is up."""
    return f"model calls: {mode} through {proxy_url}"


def describe_upstreams(upstreams: Mapping[str, Upstream]) -> str:
    """``openai: http://... (EVALRUN_UPSTREAM_OPENAI); anthropic: https://api.anthropic.com (the provider's API)``,
    or ``openai and anthropic: URL (source)`` when they share one."""
    providers = [p for p in PROVIDERS if p in upstreams]
    if len({upstreams[p] for p in providers}) == 1:
        return f"{' and '.join(providers)}: {_shown(upstreams[providers[0]])}"
    return "; ".join(f"{p}: {_shown(upstreams[p])}" for p in providers)


def _shown(upstream: Upstream) -> str:
    return f"{upstream.url} ({upstream.source})"


def upstream_lines(upstreams: Mapping[str, Upstream], own: list[tuple[str, str | None, dict[str, Upstream]]]) -> list[str]:
    """For the run's header: where each provider's calls go and where that was set (record and live modes);
    ``own``: the evals whose ``env`` changes that (``ModelCalls.own_upstreams``)."""
    if not upstreams:
        return []
    lines = [f"upstream: {describe_upstreams(upstreams)}"]
    for name, experiment, changed in own:
        cell = f"{name}[{experiment}]" if experiment else name
        lines.append(f"upstream of {cell}: {describe_upstreams(changed)}")
    return lines


def starting_service(name: str) -> str:
    return f"starting service {name}"


def leftover_line(leftover: Leftover) -> str:
    """What became of a pidfile a killed run left (``evalrun.leftovers.reap_leftovers``), said as the run starts."""
    what = "scorer of eval" if leftover.kind == "scorer" else "service"
    name, pgid = leftover.name, leftover.pgid
    if leftover.outcome == "owner unknown":
        return (f"left {what} {name} (pgid {pgid}) alone: cannot tell whether the run that started it "
                f"(pid {leftover.owner}) still runs; if it does not, stop group {pgid} and remove {leftover.pidfile}")
    if leftover.outcome == "process unknown":
        return (f"left {what} {name} (pgid {pgid}) of a killed run alone: cannot tell whether it still "
                f"runs on this system; stop group {pgid} if it does, and remove {leftover.pidfile}")
    return f"stopped leftover {what} {name} (pgid {pgid}) from an earlier run"


def stopped_service_line(stopped: StoppedService) -> str:
    """``stopped service db (pgid 123); removed its temporary cluster``: the run's services, as it ends."""
    line = f"stopped service {stopped.name} (pgid {stopped.pgid})"
    if stopped.killed_after is not None:
        line += f"; it ignored the stop request for {stopped.killed_after:.1f} s and was killed"
    if stopped.removed_cluster:
        line += "; removed its temporary cluster"
    return line


def from_clean_checkout(export: Path, worktree: bool) -> str:
    """``--clean-checkout`` / ``--worktree``: where the run runs from."""
    return f"running from a clean checkout of HEAD{' plus uncommitted changes' if worktree else ''}: {export}"


def marked_interrupted(results_path: Path) -> str:
    """Interrupted while the results and the history were written (``evalrun baseline --update``)."""
    return f"interrupted after the scorers finished: {results_path} is marked interrupted"


def results_not_written(results_path: Path, exc: OSError) -> str:
    """The interrupted run's results file could not be marked either."""
    return f"--json {results_path}: cannot write ({exc.strerror or exc})"


def step_summary_not_written(problem: object) -> str:
    """GitHub's step summary could not be appended to: a warning, never a verdict."""
    return f"GITHUB_STEP_SUMMARY: {problem}"
