"""Judging one finished scorer: its process outcome and its report turned into an ``EvalResult``.

This module owns what a scorer's run means: a program that could not start,
one that was stopped (interrupted or timed out, keeping the checks its SDK
report already holds, marked partial), reading its report in the eval's
format, applying the runner's rules to it (``evalrun.reports_in.rules``), and
noting processes that escaped its group. Whatever a report does to evalrun
fails that eval alone, never the run.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from evalrun.errors import ReportError
from evalrun.plan import PlannedEval
from evalrun.process import ProcessOutcome
from evalrun.reports_in.json_report import read_json_report
from evalrun.reports_in.parsed import ParsedReport
from evalrun.reports_in.rules import judge
from evalrun.results import CheckResult, EvalResult, SkippedTest, Status
from evalrun.text import one_line, plural, shorten

INSPECT_LOG_DIR_NAME = "inspect-logs"  # format = "inspect": INSPECT_LOG_DIR is this folder of the workdir

OUTPUT_TAIL_CHARS = 4000


def judge_outcome(
    planned: PlannedEval,
    tier: str,
    outcome: ProcessOutcome,
    report_path: Path,
    stdout_path: Path | None,
    duration: float,
    *,
    secrets: frozenset[str] = frozenset(),
    workdir: Path | None = None,
) -> EvalResult:
    spec = planned.spec
    tail = outcome.text_tail()
    base = dict(
        name=planned.name,
        experiment=planned.experiment,
        tier=tier,
        dir=spec.dir,
        duration_s=round(duration, 4),
        exit_code=outcome.exit_code,
        output_tail=tail[-OUTPUT_TAIL_CHARS:],
    )
    if outcome.start_error:
        return EvalResult(status=Status.ERROR, message=outcome.start_error, **base)
    if outcome.cancelled:
        return _stopped(planned, report_path, Status.INTERRUPTED, "interrupted while running",
                        "its process group was stopped", base)
    if outcome.timed_out:
        return _stopped(planned, report_path, Status.TIMEOUT, f"timed out after {spec.timeout:g} s",
                        "its process group was killed", base)
    parsed: ParsedReport | None = None
    report_error: str | None = None
    try:
        if outcome.stdout_path_error:  # a TAP stream cut short is no report: say why, never judge the stub
            report_error = f"invalid report: the scorer's stdout could not be saved ({outcome.stdout_path_error})"
        else:
            try:
                parsed = _read_report(planned, report_path, stdout_path, outcome, secrets, workdir)
            except ReportError as exc:
                report_error = str(exc)
        if parsed is None and _scratch_vanished(workdir, report_path):
            report_error = WORK_FOLDER_REMOVED
        verdict = judge(parsed, report_error, outcome.exit_code, tail, planned.dir, spec.dir)
    except Exception as exc:  # noqa: BLE001 - whatever a report does to evalrun fails this eval, never the run
        why = one_line(f"{type(exc).__name__}: {exc}", 200)
        return EvalResult(status=Status.ERROR, message=f"invalid report: evalrun could not judge it ({why})", **base)
    return EvalResult(
        status=verdict.status,
        message=verdict.message,
        checks=verdict.checks,
        metrics=verdict.metrics,
        skipped_tests=[SkippedTest(name=s.name, reason=s.reason) for s in verdict.skips],
        **base,
    )


WORK_FOLDER_REMOVED = (
    "the eval's work folder was removed while it ran ($EVALRUN_WORKDIR or a folder above it), and its report "
    "with it; leave removing it to evalrun, which empties it before every eval"
)


def _scratch_vanished(workdir: Path | None, report_path: Path) -> bool:
    """The scorer's scratch (its workdir, or the folder its report goes in) is gone: removed while it ran."""
    if workdir is None:
        return False
    return not (os.path.lexists(workdir) and os.path.lexists(report_path.parent))


def _stopped(
    planned: PlannedEval, report_path: Path, status: Status, what: str, how: str, base: dict[str, Any]
) -> EvalResult:
    """A scorer we stopped: keep the checks its SDK report already holds, marked partial,
    and name the check it was in, if the report says."""
    partial: ParsedReport | None = None
    if planned.spec.format == "json":
        try:
            partial = read_json_report(report_path)
        except ReportError:
            partial = None  # nothing written yet, or torn beyond use: nothing to keep
    if partial is None:
        return EvalResult(status=status, message=f"{what}; {how}", **base)
    running = partial.running if isinstance(partial.running, str) and partial.running else None
    checks = list(partial.checks)
    where = ""
    if running is not None:
        where = f' during check "{running}"'
        if running not in {c.name for c in checks}:
            checks.append(CheckResult(name=running, assertions=0, passed=False, message=f"did not finish: {what}"))
    finished = len(partial.checks)
    kept = f"kept the {plural(finished, 'check')} it finished (partial)"
    return EvalResult(
        status=status,
        message=shorten(f"{what.removesuffix(' while running') + where if where else what}; {how}; {kept}"),
        checks=checks,
        metrics=partial.metrics,
        partial=True,
        **base,
    )


def _read_report(
    planned: PlannedEval,
    report_path: Path,
    stdout_path: Path | None,
    outcome: ProcessOutcome,
    secrets: frozenset[str],
    workdir: Path | None,
) -> ParsedReport:
    spec = planned.spec
    if spec.format == "exit":
        from evalrun.reports_in.exit_code import parse_exit

        assert outcome.exit_code is not None  # a program that did not start is judged before
        return parse_exit(spec.name, outcome.exit_code, outcome.text_tail(), secrets=secrets)
    if spec.format == "tap":
        from evalrun.reports_in.tap import parse_tap

        assert stdout_path is not None
        # Test::More prints a failed point's got/expected on stderr: the tail is where to find it.
        stderr = outcome.stderr_tail.decode("utf-8", errors="replace")
        return parse_tap(stdout_path, stderr=stderr, secrets=secrets)
    if spec.format == "junit":
        from evalrun.reports_in.junit import parse_junit

        assert spec.junit is not None
        counts = None
        if workdir is not None:  # what evalrun's vitest/jest setup file recorded in this run's own workdir
            from evalrun.reports_in.assertion_counts import COUNTS_DIR_NAME, read_assertion_counts

            counts = read_assertion_counts(workdir / COUNTS_DIR_NAME, f"$EVALRUN_WORKDIR/{COUNTS_DIR_NAME}")
        return parse_junit(planned.dir / spec.junit, label=f"{spec.dir}/{spec.junit}", secrets=secrets, counts=counts)
    if spec.format == "pytest-reportlog":
        from evalrun.reports_in.reportlog import parse_reportlog

        assert spec.reportlog is not None
        return parse_reportlog(planned.dir / spec.reportlog, label=f"{spec.dir}/{spec.reportlog}", secrets=secrets)
    if spec.format == "inspect":
        from evalrun.reports_in.inspect_log import parse_inspect

        assert workdir is not None
        return parse_inspect(workdir / INSPECT_LOG_DIR_NAME, "$INSPECT_LOG_DIR", secrets=secrets)
    if spec.format == "promptfoo":
        from evalrun.reports_in.promptfoo import parse_promptfoo

        assert spec.promptfoo is not None
        return parse_promptfoo(planned.dir / spec.promptfoo, label=f"{spec.dir}/{spec.promptfoo}", secrets=secrets)
    return read_json_report(report_path, secrets=secrets)


def note_escaped(result: EvalResult, outcome: ProcessOutcome) -> EvalResult:
    """Not a verdict on what it checked; said, so a scorer that daemonizes is fixed, not stopped in every run."""
    if not outcome.escaped:
        return result
    note = f"it left {', '.join(outcome.escaped)} running outside its process group, holding its output; evalrun stopped it"
    return replace(result, message=f"{result.message}; {note}" if result.message else note)
