"""Reporters for CI: JUnit XML, a Markdown summary and GitHub annotations.

Each reporter takes a finished ``RunResults`` and renders it; none decides
anything. What they share lives here, so that the three say the same thing in
the same words: the verdict for an exit code and the one-line story of a
failed, skipped or regressed eval.
"""

from __future__ import annotations

import re

from evalrun.baseline import update_command
from evalrun.errors import ExitCode
from evalrun.results import BaselineChange, EvalResult, JudgeCalibration, RunResults, Status
from evalrun.verdict import VERDICT_WORDS

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# C0/C1 controls other than tab and newlines, and what XML 1.0 cannot carry (surrogates, U+FFFE/U+FFFF).
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def describe_verdict(results: RunResults) -> str:
    """``failed (exit 1)``: the verdict a reader needs first."""
    code = results.exit_code
    if code is None:
        return "interrupted (no exit code)" if results.interrupted else "unfinished (no exit code)"
    try:
        label = VERDICT_WORDS[ExitCode(code)]  # the terminal's words, so report and console agree
    except ValueError:
        label = "unknown outcome"
    return f"{label} (exit {code})"


def failed_checks(result: EvalResult) -> list[str]:
    """``name: message`` of each failed check, in report order."""
    return [f"{c.name}: {c.message}" if c.message else c.name for c in result.checks if not c.passed]


def describe_failure(result: EvalResult) -> str:
    """Why an eval failed, errored or timed out, in one paragraph (may hold newlines)."""
    lines: list[str] = []
    if result.status is Status.TIMEOUT:
        lines.append(result.message or "timed out")
    elif result.message:
        lines.append(result.message)
    failures = failed_checks(result)
    if failures:
        lines.append(f"{len(failures)} failed check{'s' if len(failures) != 1 else ''}: " + failures[0])
        lines.extend(failures[1:])
    return "\n".join(lines) or result.status.value


def describe_unchecked(result: EvalResult) -> str:
    """Why an eval was not checked: ``skipped: env OPENAI_API_KEY is not set``."""
    return f"{result.status.value}: {result.message}" if result.message else result.status.value


def regression_case_name(change: BaselineChange) -> str:
    """A stable test name for a regression: counts stay out so CI history lines up across runs."""
    if change.check is None:
        return f'baseline: eval "{change.eval}" vanished'
    if change.kind == "weakened":
        return f'baseline: check "{change.check}" asserts less'
    if change.kind == "decayed":  # a repeated eval's pass rate dropped beyond chance (evalrun.baseline_rates)
        return f'baseline: check "{change.check}" passes less often'
    if change.kind == "improved":
        return f'baseline: check "{change.check}" passes more often'
    return f'baseline: check "{change.check}" vanished'


def update_hint(results: RunResults) -> str:
    """The command that records the current state, as the baseline comparison gave it."""
    if results.baseline is not None and results.baseline.update_command:
        return results.baseline.update_command
    return update_command(results.tier)


def printable(text: str) -> str:
    """Scorer output made safe to show: terminal colour codes dropped, other controls spelled out (``\\x00``)."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m.group()):02x}", _ANSI.sub("", text))


def calibration_lines(cal: JudgeCalibration) -> list[str]:
    """A judge's agreement with people on its anchors, and the judged pass rate corrected for it."""
    judge = cal.judge.replace("#", " (rubric ") + ")" if cal.judge else "the judge"
    agreed = cal.both_pass + cal.both_fail
    rates = ", ".join(
        f"{label} {value:.2f}" for label, value in (
            ("TPR", cal.true_positive_rate), ("TNR", cal.true_negative_rate), ("kappa", cal.kappa), ("AC1", cal.ac1),
        ) if value is not None
    )
    lines = [f"judge {judge}: agrees with people on {agreed} of {cal.anchors} anchors ({cal.eval}): {rates or 'no rates'}"]
    if cal.kappa is None:
        lines.append("  kappa is undefined: every anchor got the same verdict; add anchors of the other kind")
    if cal.disagree:
        lines.append(
            f"  kappa and AC1 disagree ({cal.kappa:.2f} vs {cal.ac1:.2f}): the anchors are unbalanced; "
            "add anchors of the rarer verdict before trusting either"
        )
    if cal.below:
        lines.append(f"  below its floor: {'; '.join(cal.below)} ({cal.eval} fails)")
    if cal.judged_checks:
        text = f"  judged checks: {cal.judged_passes} of {cal.judged_checks} pass ({cal.judged_passes / cal.judged_checks:.0%})"
        if cal.corrected is not None:
            est, low, high = cal.corrected
            text += f"; corrected for the judge's errors {est:.0%} (95% CI {low:.0%}-{high:.0%})"
        else:
            text += "; no correction: the judge is no better than chance on its anchors"
        lines.append(text)
    return lines
