"""The run's closing report on the terminal: every outcome word and colour, from the judged results.

One function, ``report``, reads a judged ``RunResults`` (and where the run
wrote) and prints, in order: the output tails (``-v``), the baseline lines,
what was not checked, the pass rates and flaky checks of repeated evals, the
judges' agreement, the models that answered and the cost, the table, the
experiments side by side, the closing counts, the verdict and the files. The
colour of each line is chosen here and nowhere else; the domain modules
(``baseline``, ``repeats``, ``models``, ``verdict``) hand over records.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from evalrun.reports_out.baseline_text import format_comparison
from evalrun.errors import ExitCode
from evalrun.repeats import flaky_checks
from evalrun.reports_out.describe import (
    calibration_lines, describe_cost, describe_models, describe_repeats, flaky_line, rate_line,
)
from evalrun.reports_out.matrix import plain_lines, side_by_side
from evalrun.reports_out.terminal import Console, closing_line, output_tails
from evalrun.results import EvalResult, RunResults
from evalrun.reports_out.describe import VERDICT_WORDS


class WrittenFiles(Protocol):
    """Where the run wrote (``pipeline.Outputs``): the results file, and JUnit and Markdown if asked for."""

    @property
    def results(self) -> Path: ...

    @property
    def junit(self) -> Path | None: ...

    @property
    def markdown(self) -> Path | None: ...


def report(results: RunResults, console: Console, outputs: WrittenFiles | None = None, *, verbose: bool = False,
           shown: bool = True) -> None:
    """Baseline lines, what was not checked, models, the summary table, the closing line, the verdict, the files.

    ``verbose``: first, the output tail of every eval that failed. ``shown``: each eval's line, with its
    message, was printed as it finished (a run and a merge print it), so the baseline lines do not repeat it.
    """
    console.line("")
    if verbose:
        for text in output_tails(results.evals):
            console.line(text)
    if results.baseline is not None:
        for text in format_comparison(
            results.baseline, results.evals, run_failed=results.exit_code == ExitCode.FAILED, selection=results.selection,
            said_above=shown,  # each eval's line above holds its message: said once
        ):
            console.line(text, "red" if text.startswith("regression") else "yellow")
    unchecked = [r for r in results.evals if r.status.is_unchecked]
    if unchecked:
        console.warn(f"not checked ({len(unchecked)}):")
        for r in unchecked:
            console.warn(f"  {r.status.value:<11} {r.name}: {r.message}")
    for text, style in repeat_lines(results.evals):
        console.line(text, style)
    for cal in results.judges:
        for text in calibration_lines(cal):
            console.line(text, "red" if cal.below else ("yellow" if cal.disagree else None))
    answered = [line for line in map(describe_models, results.evals) if line]
    if answered:
        console.line("models that answered:")
        for line in answered:
            console.line(f"  {line}")
    if results.cost is not None:
        cost_line = f"cost: {describe_cost(results.cost)}"
        console.line(cost_line, "yellow" if results.cost.get("unpriced_calls") else None)
    console.summary(results.evals)
    grid = side_by_side(results.evals)
    if grid is not None:  # experiments as columns: which environment broke, at a glance
        console.line("side by side (experiments as columns):")
        for text in plain_lines(grid):
            console.line(f"  {text}")
    console.line(closing_line(results.evals))
    code = results.exit_code if results.exit_code is not None else 0
    words = VERDICT_WORDS.get(ExitCode(code), "")
    console.line(f"evalrun {results.tier}: {words} (exit {code})", "green" if code == 0 else "bold red")
    if outputs is not None:
        console.line(f"results: {outputs.results}")
        for label, path in (("junit", outputs.junit), ("markdown", outputs.markdown)):
            if path is not None:
                console.line(f"{label}: {path}")


def repeat_lines(results: Sequence[EvalResult]) -> list[tuple[str, str | None]]:
    """Each repeated eval's pass rates, then every flaky check on a line of its own (loud, like skips); with colours."""
    lines: list[tuple[str, str | None]] = []
    repeated = [r for r in results if r.repeats is not None and r.checks]
    if repeated:
        lines.append(("pass rates:", None))
    for r in repeated:
        lines.append((f"  {r.name}: {describe_repeats(r)}", None))
        lines.extend((f"    {rate_line(c)}", None if c.passed else "red") for c in r.checks if c.rate is not None)
    flaky = flaky_checks(results)
    if flaky:
        lines.append((f"flaky ({len(flaky)}):", "yellow"))
        lines.extend((f"  FLAKY {flaky_line(f)}", "yellow") for f in flaky)
    return lines


def interrupted_report(tier: str, results_path: Path, console: Console) -> None:
    """The closing lines of a run interrupted once every scorer was done (writing, the history, reports): exit 130."""
    console.warn("interrupted after the scorers finished: every result was kept; the run is marked interrupted")
    console.line(f"evalrun {tier}: interrupted (exit {int(ExitCode.INTERRUPTED)})", "bold red")
    console.line(f"results: {results_path}")
