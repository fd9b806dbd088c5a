"""What ``evalrun bites`` and ``evalrun merge`` of bites shards print: one line per bite, then the verdict."""

from __future__ import annotations

from pathlib import Path

from evalrun.errors import ExitCode
from evalrun.reports_out.terminal import Console
from evalrun.results import BROKEN, CAUGHT, NOT_CAUGHT, EvalResult, RunResults, outcome_of
from evalrun.text import plural
from evalrun.reports_out.describe import VERDICT_WORDS

_WORDS = {CAUGHT: ("CAUGHT", "green"), NOT_CAUGHT: ("NOT CAUGHT", "bold red"), BROKEN: ("BROKEN", "red")}


def show_bite(console: Console, result: EvalResult) -> None:
    """``CAUGHT      eval: bite name  caught: ...``: one bite's outcome, as it finishes."""
    outcome = outcome_of(result)
    word, style = _WORDS.get(outcome, (outcome.upper(), "yellow"))
    console.line(f"{word:<11} {result.name}  {result.message or ''}", style)


LIVE_BITES = "bites t3: every bite makes live model calls, within the tier's budget"
WAITING_FOR_BITES = "interrupted: waiting for the bites already running to stop"


def bites_header(tier: str, bites: int, worktree: bool) -> str:
    """``bites of t1: 3 bites, each on a clean copy of HEAD``: the tier's bites, before the first starts."""
    source = "HEAD plus uncommitted changes" if worktree else "HEAD"
    return f"bites of {tier}: {plural(bites, 'bite')}, each on a clean copy of {source}"


def bites_page_note(tier: str) -> str:
    """The HTML page of a bites run says what its rows are."""
    return f"bites of {tier}: each row is one bite, caught when its checks failed"


def html_written(path: Path) -> str:
    return f"html: {path}"


def html_not_written(path: Path, exc: OSError) -> str:
    return f"html report not written: {path}: {exc.strerror or exc}"


def merged_header(tier: str, bites: int, shards: int) -> str:
    return f"bites of {tier}: {plural(bites, 'bite')} merged from {plural(shards, 'shard')}"


def report_bites(results: RunResults, console: Console, results_path: Path, junit: Path | None = None,
                 markdown: Path | None = None) -> None:
    """The closing lines: each check not caught, the counts, ``evalrun bites TIER: ... (exit N)``, the files written."""
    console.line("")
    counts = {k: sum(outcome_of(r) == k for r in results.evals) for k in (CAUGHT, NOT_CAUGHT, BROKEN)}
    other = len(results.evals) - sum(counts.values())
    for r in results.evals:
        if outcome_of(r) == NOT_CAUGHT:
            for check in r.checks:
                if not check.passed:
                    console.line(f"not caught: {r.metrics.get('eval')}: check \"{check.name}\" passed with "
                                 f"{r.metrics.get('breaks')}: it cannot fail this way", "red")
    console.line(f"{counts[CAUGHT]} caught, {counts[NOT_CAUGHT]} not caught, {counts[BROKEN]} broken"
                 + (f", {other} not run" if other else ""))
    code = results.exit_code or 0
    words = "every bite caught" if code == 0 else VERDICT_WORDS.get(ExitCode(code), "")
    if code == ExitCode.REGRESSED:
        words = "a check cannot fail"
    console.line(f"evalrun bites {results.tier}: {words} (exit {code})", "green" if code == 0 else "bold red")
    console.line(f"results: {results_path}")
    for label, path in (("junit", junit), ("markdown", markdown)):
        if path is not None:
            console.line(f"{label}: {path}")
