"""The rules the runner applies to any scorer's report, whatever the scorer says.

Zero assertions fails a check, no checks fails the eval, a non-zero exit fails
the eval, a zero exit without a valid report fails, duplicate check names are an
error. It also finds the line that explains a crash, so users read
``KeyError: 'tenant'`` rather than the last stack frame.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

from evalrun.reports_in.parsed import ParsedReport, Skip
from evalrun.results import CheckResult, Status
from evalrun.text import MESSAGE_LIMIT, plural, shorten


class Verdict(NamedTuple):
    """What the runner's rules make of one finished scorer."""

    status: Status
    message: str | None
    checks: list[CheckResult]
    metrics: dict[str, Any]
    skips: list[Skip] | tuple[Skip, ...] = ()  # the report's skipped tests: not checks, but reported


def judge(
    parsed: ParsedReport | None,
    report_error: str | None,
    exit_code: int | None,
    output: str,
    eval_dir: Path | None = None,
    shown_dir: str = "",
) -> Verdict:
    """Apply the scorer contract's rules to a scorer that ran to its end (not timed out).

    ``eval_dir`` (and ``shown_dir``, how messages name it): a crash's message
    names the innermost frame of its traceback in that folder, ``(at score.py:12)``.
    """
    verdict = _judge(parsed, report_error, exit_code, output, eval_dir, shown_dir)
    return verdict._replace(skips=list(parsed.skips)) if parsed is not None and parsed.skips else verdict


def _judge(
    parsed: ParsedReport | None, report_error: str | None, exit_code: int | None, output: str,
    eval_dir: Path | None, shown_dir: str,
) -> Verdict:
    if parsed is None:
        why = explain_failure(output)
        if why and eval_dir is not None and (place := crash_place(output, eval_dir, shown_dir)):
            why += f" (at {place})"
        if exit_code == 0 and report_error and report_error.startswith("invalid report"):
            msg = report_error
        elif exit_code == 0:
            msg = f"exited 0 but {report_error or 'wrote no valid report'}"
        else:
            msg = f"exited {exit_code}: {why}" if why else f"exited {exit_code} ({report_error})"
            if why and report_error and "no report" not in report_error:
                msg += f"; {report_error}"
        return Verdict(Status.ERROR, _clip(msg), [], {})
    unnamed = _first_unrepresentable_name(parsed)
    if unnamed is not None:  # no results file, baseline or history could hold it: the eval fails, alone
        return Verdict(Status.ERROR, _clip(f"invalid report: {unnamed}"), [], {})
    checks = [_apply_check_rules(_representable_check(c)) for c in parsed.checks]
    metrics = _representable_metrics(parsed.metrics)
    if metrics is not parsed.metrics:
        parsed = parsed._replace(metrics=metrics)
    names: set[str] = set()
    for c in checks:
        if c.name in names:
            return Verdict(Status.ERROR, _clip(f'duplicate check name "{_fold(c.name)}" in the report'), checks,
                           parsed.metrics)
        names.add(c.name)
    failed = [c for c in checks if not c.passed]
    if parsed.problem:
        suffix = f" (exited {exit_code})" if exit_code != 0 else ""
        return Verdict(Status.FAILED, _clip(parsed.problem + suffix), checks, parsed.metrics)
    if exit_code != 0 and failed:
        # Test runners (node, prove, pytest) exit non-zero because a test failed:
        # the failed check is the explanation, and the eval has failed either way.
        message = _failed_message(failed)
        if failed[0].message == _NODE_FILE_FAILED and (why := explain_failure(output)):
            message += f": {why}"  # node's JUnit says only "test failed" for a file that could not load; its output says why
        return Verdict(Status.FAILED, _clip(f"{message} (exited {exit_code})"), checks, parsed.metrics)
    if exit_code != 0:
        why = explain_failure(output)
        if why and eval_dir is not None and (place := crash_place(output, eval_dir, shown_dir)):
            why += f" (at {place})"
        passed = sum(c.passed for c in checks)
        msg = f"exited {exit_code} although its report says {passed} of {len(checks)} checks passed"
        if why:
            msg += f": {why}"
        return Verdict(Status.ERROR, _clip(msg), checks, parsed.metrics)
    note = "; ".join(filter(None, [parsed.skipped_note(), *parsed.notes])) or None
    if parsed.skip_all is not None and not checks:
        return Verdict(Status.SKIPPED, _clip(note or f"skipped: {parsed.skip_all}"), checks, parsed.metrics)
    if not checks and parsed.skips:
        # Every test skipped (pytest -k picking only skipped tests): not checked, with the reasons, as TAP's 1..0 # SKIP.
        return Verdict(Status.SKIPPED, _clip(f"everything skipped in {parsed.source}: " + "; ".join(parsed.skipped)),
                       checks, parsed.metrics)
    if not checks:
        return Verdict(Status.FAILED, "the report has no checks", checks, parsed.metrics)
    if failed:
        return Verdict(Status.FAILED, _clip(_failed_message(failed)), checks, parsed.metrics)
    return Verdict(Status.PASSED, _clip(note) if note else None, checks, parsed.metrics)


def _failed_message(failed: list[CheckResult]) -> str:
    first = failed[0]
    # The eval's message is one line: a name or message with line breaks is folded here (the check keeps them).
    msg = f'check "{_fold(first.name)}" failed' + (f": {_fold(first.message)}" if first.message else "")
    if len(failed) > 1:
        msg += f" (and {plural(len(failed) - 1, 'more failed check')})"
    return msg


def _apply_check_rules(check: CheckResult) -> CheckResult:
    if check.assertions == 0:
        note = "asserted nothing"
        # The SDK already says so for its own zero-assertion checks: say it once.
        if check.message and check.passed is False and note not in check.message:
            message = f"{note}; {check.message}"
        else:
            message = check.message if check.message and check.passed is False else note
        return replace(check, passed=False, message=message)
    return check


_NODE_FILE_FAILED = "test failed"  # node --test's whole message for a test file that failed to load
_TRACEBACK_START = "Traceback (most recent call last):"


def explain_failure(output: str) -> str:
    """The line(s) that explain a crash: a Python traceback's final exception line,
    else a JavaScript/TypeScript error line (``crash_line``), else the last lines
    that look like an error (never a stack frame), else the last non-empty line."""
    from evalrun.reports_in.crash_line import (  # local: only a crash is explained
        ERRORISH, EXCEPTION_LINE, is_stack_frame, js_error_line)

    lines = [ln.rstrip() for ln in output.splitlines()]
    if _TRACEBACK_START in lines:
        start = len(lines) - 1 - lines[::-1].index(_TRACEBACK_START)
        for ln in reversed(lines[start + 1 :]):
            if ln and not ln.startswith((" ", "\t")) and EXCEPTION_LINE.match(ln):
                return _clip(ln)
    if js := js_error_line(lines):
        return _clip(js)
    errorish = [ln.strip() for ln in lines if ln.strip() and ERRORISH.search(ln) and not is_stack_frame(ln)]
    if errorish:
        return _clip(" | ".join(errorish[-3:]))
    tail = [ln.strip() for ln in lines if ln.strip() and not is_stack_frame(ln)] or [ln.strip() for ln in lines if ln.strip()]
    return _clip(tail[-1]) if tail else ""


def crash_place(output: str, eval_dir: Path, shown_dir: str = "") -> str | None:
    """``evals/x/score.py:12``: the innermost traceback frame in the eval's folder (Python or JS/TS), if any.

    Python prints the innermost frame last, node first: the last traceback
    and the first stack of the output are the ones read.
    """
    from evalrun.reports_in.crash_line import JS_FRAME, PYTHON_FRAME  # local: only a crash is placed

    lines = output.splitlines()
    if _TRACEBACK_START in lines:
        start = len(lines) - 1 - lines[::-1].index(_TRACEBACK_START)
        frames = [m for ln in lines[start + 1 :] if (m := PYTHON_FRAME.match(ln))]
        frames.reverse()
    else:
        frames = [m for ln in lines if (m := JS_FRAME.match(ln))]
    # Python 3.11's resolve() raises RuntimeError, not OSError, on a symlink loop (a scorer can make one).
    try:
        root = eval_dir.resolve()
    except (OSError, RuntimeError):
        return None
    for match in frames:
        path = Path(match["path"])
        try:
            rel = (path if path.is_absolute() else eval_dir / path).resolve().relative_to(root)
        except (ValueError, OSError, RuntimeError):
            continue
        if "node_modules" in rel.parts or "site-packages" in rel.parts:
            continue
        shown = f"{shown_dir.rstrip('/')}/{rel.as_posix()}" if shown_dir and shown_dir != "." else rel.as_posix()
        return _clip(f"{shown}:{match['line']}")
    return None


def _fold(text: str) -> str:
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


def _clip(text: str) -> str:
    return shorten(_representable(text), MESSAGE_LIMIT)


# --- text a results file can hold ------------------------------------------------
#
# A lone surrogate (JSON's "\ud800", valid JSON, not valid Unicode) cannot be written as
# UTF-8. In a check name it is refused: names are the baseline's keys, and a name
# changed here would be a different check. In a message, evidence or metric it
# becomes U+FFFD, as a decoder shows any byte it cannot read.

_SURROGATE = re.compile("[\ud800-\udfff]")


def _representable(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _first_unrepresentable_name(parsed: ParsedReport) -> str | None:
    for index, check in enumerate(parsed.checks):
        found = _SURROGATE.search(check.name)
        if found is not None:
            shown = ascii(check.name[:60])
            return (f"checks[{index}].name {shown} is not valid Unicode (a lone surrogate "
                    f"\\u{ord(found.group()):04x} at character {found.start() + 1}); name checks with text UTF-8 can hold")
    return None


def _representable_check(check: CheckResult) -> CheckResult:
    message = _representable(check.message) if check.message else check.message
    evidence = _representable(check.evidence) if check.evidence else check.evidence
    if message is check.message and evidence is check.evidence:
        return check
    return replace(check, message=message, evidence=evidence)


def _representable_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    if not any(_SURROGATE.search(k) or (isinstance(v, str) and _SURROGATE.search(v)) for k, v in metrics.items()):
        return metrics
    return {_representable(k): _representable(v) if isinstance(v, str) else v for k, v in metrics.items()}
