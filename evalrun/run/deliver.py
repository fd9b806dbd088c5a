"""Deliver a judged run: the results file, JUnit, Markdown, GitHub's summary, the history, the report, the HTML page.

Every step here takes the run's context (``evalrun.run.context.RunContext``):
its console, its environment (where GitHub's summary goes, where the history
is), its secrets (scrubbed from what the history and the page keep), the
manifest it shows, and the history located once an invocation. Nothing written
here changes the exit code but a results file that cannot be written (exit 2):
the history and the HTML page are side channels and only warn.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from evalrun.atomic import writes_in_place
from evalrun.baseline import Baseline
from evalrun.errors import ExitCode, OutputError, ReportError
from evalrun.reports_out.run_notes import marked_interrupted, results_not_written, step_summary_not_written
from evalrun.reports_out.summary import interrupted_report, report
from evalrun.reports_out.terminal import Console
from evalrun.results import RunResults, write_results
from evalrun.run.context import RunContext
from evalrun.run.requests import Outputs
from evalrun.run.signals import sigterm_as_interrupt, sigterm_ignored


def deliver(judged: RunResults, context: RunContext, outputs: Outputs, *, source: str, verbose: bool = False) -> int:
    """Write, record, report (and the HTML page); the exit code. Interrupted here: 130, and the results file says so.

    ``source``: what the history calls the run (run, merge); ``verbose``: the report prints the output tail of
    every failing eval (``-v``).
    """
    console = context.console
    try:
        with sigterm_as_interrupt():
            write(judged, outputs, context)
            history_warning = record(judged, context, source=source)
            report(judged, console, outputs, verbose=verbose)
            write_html(judged, context, outputs, history_warning)
    except KeyboardInterrupt:
        interrupted_after_scorers(judged, outputs, context)
        return int(ExitCode.INTERRUPTED)
    return int(judged.exit_code or 0)


def keep_and_record(results: RunResults, results_path: Path, context: RunContext, *, source: str) -> None:
    """The results file, then the history; interrupted here, the file is marked so and KeyboardInterrupt goes on."""
    try:
        with sigterm_as_interrupt():
            write_results(results, results_path)
            record(results, context, source=source)
    except KeyboardInterrupt:
        stopped = replace(results, interrupted=True, exit_code=int(ExitCode.INTERRUPTED))
        with sigterm_ignored(), contextlib.suppress(OSError):
            write_results(stopped, results_path)
        context.console.warn(marked_interrupted(results_path))
        raise


def interrupted_after_scorers(judged: RunResults, outputs: Outputs, context: RunContext) -> None:
    """Interrupted once every scorer was done (writing, the history, reports): the results file says 130 too."""
    console = context.console
    console.stop_progress()
    stopped = replace(judged, interrupted=True, exit_code=int(ExitCode.INTERRUPTED))
    with sigterm_ignored():  # one more signal must not leave the file half-decided
        try:
            write_results(stopped, outputs.results)
        except OSError as exc:
            console.warn(results_not_written(outputs.results, exc))
    interrupted_report(judged.tier, outputs.results, console)


def write(results: RunResults, outputs: Outputs, context: RunContext) -> None:
    """The results file, then JUnit XML, a Markdown summary and GitHub's step summary and annotations."""
    console, environ = context.console, context.environ
    _write_output(lambda: write_results(results, outputs.results), "--json", outputs.results)
    if outputs.junit is not None:
        from evalrun.reports_out.junit import write_junit

        _write_output(lambda: write_junit(results, outputs.junit), "--junit", outputs.junit)
    if outputs.markdown is not None:
        from evalrun.reports_out.markdown import write_markdown

        _write_output(lambda: write_markdown(results, outputs.markdown), "--markdown", outputs.markdown)
    if environ.get("GITHUB_STEP_SUMMARY"):
        from evalrun.reports_out.github import append_github_step_summary

        try:
            append_github_step_summary(results, environ)
        except ReportError as exc:  # a summary we cannot write must not change the verdict
            console.warn(step_summary_not_written(exc))
    if environ.get("GITHUB_ACTIONS") == "true":
        from evalrun.reports_out.github import github_annotations

        for line in github_annotations(results):
            console.command(line)


def _write_output(write_one: Callable[[], None], flag: str, path: Path) -> None:
    """Write one output; if that fails, the last run's file there is removed: it must never look current."""
    try:
        write_one()
    except BaseException as exc:
        if not writes_in_place(path):
            with contextlib.suppress(OSError):
                os.unlink(path)
        if isinstance(exc, OSError):
            raise OutputError(f"{flag} {path}: cannot write ({exc.strerror or exc}); choose a writable path") from None
        raise


def record(results: RunResults, context: RunContext, *, source: str) -> str | None:
    """Append the run to the history store; a history that cannot be written is a warning (returned too), never a verdict."""
    from evalrun.history import record_run

    if warning := record_run(context.shown, results, context.environ, source=source, secrets=context.secrets.values,
                             locate=context.session.locate_history):
        context.console.warn(warning)
    return warning


def write_html(results: RunResults, context: RunContext, outputs: Outputs, history_warning: str | None = None) -> None:
    """The HTML report of this run and the history's last runs, when ``--html`` asked for it.

    ``history_warning``: this run could not be recorded; the history is not waited for a second time.
    """
    if outputs.html is None:
        return
    from evalrun.reports_out.html import write_html_after_run

    console = context.console
    if warning := write_html_after_run(context.shown, results, outputs.html, context.environ, console, history_warning,
                                       secrets=context.secrets.values, locate=context.session.locate_history):
        console.warn(warning)


def maybe_positional(name: str) -> bool:
    """False only for a name ``find_positional`` can never count: one without "[" and without "test"
    (a parametrize id is ``stem[ids]``; a numbered one holds ``test N`` or ``testcase N``)."""
    return "[" in name or "test" in name


def positional_warnings(results: RunResults, baseline: Baseline | None, console: Console) -> None:
    """Warn of each eval whose checks are named by position, on every run: the baseline cannot see a case
    replaced at the same position, so a run that passes is no evidence; a vanished position is named too."""
    if not any(maybe_positional(c.name) for r in results.evals for c in r.checks):
        return  # no name can be one: the finder (and its patterns) is not loaded
    from evalrun.reports_in.positional import find_positional
    from evalrun.reports_out.positional import positional_warning

    for result in results.evals:
        known = list((baseline or {}).get(result.name, {}))
        names = [c.name for c in result.checks]
        if names and (found := find_positional(names)) is not None:
            was = find_positional(known)
            current = set(names)
            vanished = [n for n in known if n not in current] if was is not None and was.tool == found.tool else []
            console.warn(positional_warning(result.name, found, vanished))
