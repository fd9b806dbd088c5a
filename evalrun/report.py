"""Reading a scorer's report and applying the runner's rules to it.

This module owns the scorer contract's report (its pydantic model, from which
the published ``report.schema.json`` is generated) and the rules DESIGN.md
applies whatever the scorer says: zero assertions fails a check, no checks fails
the eval, a non-zero exit fails the eval, a zero exit without a valid report
fails, duplicate check names are an error. It also finds the line that explains
a crash, so users read ``KeyError: 'tenant'`` rather than the last stack frame.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrun.errors import ReportError
from evalrun.results import CheckResult, Status

SCHEMA_PATH = Path(__file__).parent / "schemas" / "report.schema.json"
_MAX_MESSAGE = 500


class ReportCheck(BaseModel):
    """One check as a scorer reports it."""

    model_config = ConfigDict(extra="forbid", title="Check")

    name: str = Field(min_length=1, description="Unique within the report; used in baselines.")
    assertions: int = Field(ge=0, description="How many assertions the check made. Zero fails the check.")
    passed: bool
    message: str | None = Field(default=None, description="Why it failed, in one line.")
    evidence: str | None = Field(default=None, description="What the scorer saw, for diagnosis.")


class Report(BaseModel):
    """The JSON report a scorer writes to $EVALRUN_REPORT."""

    model_config = ConfigDict(extra="forbid", title="evalrun scorer report")

    checks: list[ReportCheck]
    metrics: dict[str, float | int | str | bool] = Field(
        default_factory=dict, description="Recorded and shown, never asserted."
    )


def generate_report_schema() -> dict[str, Any]:
    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://evalrun.invalid/schemas/report.schema.json"
    return schema


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema  # heavy: imported only when a report is read

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    # The same schema with its local $refs inlined: equal in meaning, and about
    # twice as fast to check, since no reference is resolved per report.
    return cls(_inline_refs(schema, schema.get("$defs", {})))


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            return _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


@dataclass(frozen=True)
class ParsedReport:
    """A report in any format (JSON, TAP, JUnit), before the runner's rules."""

    checks: list[CheckResult]
    metrics: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # an eval-level failure: "Bail out! db gone", "planned 3, ran 2"
    skipped: list[str] = field(default_factory=list)  # "name (reason)" of each skipped test: not checks
    skip_all: str | None = None  # the whole stream was skipped (TAP "1..0 # SKIP why"): the reason
    source: str = ""  # "TAP" or "JUnit", for messages

    def skipped_note(self) -> str | None:
        """One line for the eval's message, e.g. ``skipped in TAP: network (no network)``; None if none."""
        if self.skip_all is not None:
            return f"everything skipped in {self.source}: {self.skip_all}"
        if not self.skipped:
            return None
        return f"skipped in {self.source}: " + "; ".join(self.skipped)


def read_json_report(path: Path) -> ParsedReport:
    """Read and validate a JSON report; ReportError says precisely what is wrong."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ReportError("no report was written to $EVALRUN_REPORT") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"invalid report: not JSON ({exc})") from None
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ReportError(f"invalid report: {where or 'top level'}: {err.message}{more}")
    checks = [CheckResult(**c) for c in data["checks"]]
    return ParsedReport(checks=checks, metrics=dict(data.get("metrics", {})))


@dataclass(frozen=True)
class Verdict:
    """What the runner's rules make of one finished scorer."""

    status: Status
    message: str | None
    checks: list[CheckResult]
    metrics: dict[str, Any]


def judge(parsed: ParsedReport | None, report_error: str | None, exit_code: int | None, output: str) -> Verdict:
    """Apply DESIGN.md's rules to a scorer that ran to its end (not timed out)."""
    if parsed is None:
        why = explain_failure(output)
        if exit_code == 0 and report_error and report_error.startswith("invalid report"):
            msg = report_error
        elif exit_code == 0:
            msg = f"exited 0 but {report_error or 'wrote no valid report'}"
        else:
            msg = f"exited {exit_code}: {why}" if why else f"exited {exit_code} ({report_error})"
            if why and report_error and "no report" not in report_error:
                msg += f"; {report_error}"
        return Verdict(Status.ERROR, _clip(msg), [], {})
    checks = [_apply_check_rules(c) for c in parsed.checks]
    names: set[str] = set()
    for c in checks:
        if c.name in names:
            return Verdict(Status.ERROR, f'duplicate check name "{c.name}" in the report', checks, parsed.metrics)
        names.add(c.name)
    failed = [c for c in checks if not c.passed]
    if parsed.problem:
        suffix = f" (exited {exit_code})" if exit_code != 0 else ""
        return Verdict(Status.FAILED, _clip(parsed.problem + suffix), checks, parsed.metrics)
    if exit_code != 0 and failed:
        # Test runners (node, prove, pytest) exit non-zero because a test failed:
        # the failed check is the explanation, and the eval has failed either way.
        return Verdict(Status.FAILED, _clip(f"{_failed_message(failed)} (exited {exit_code})"), checks, parsed.metrics)
    if exit_code != 0:
        why = explain_failure(output)
        passed = sum(c.passed for c in checks)
        msg = f"exited {exit_code} although its report says {passed} of {len(checks)} checks passed"
        if why:
            msg += f": {why}"
        return Verdict(Status.ERROR, _clip(msg), checks, parsed.metrics)
    note = parsed.skipped_note()
    if parsed.skip_all is not None and not checks:
        return Verdict(Status.SKIPPED, _clip(note or f"skipped: {parsed.skip_all}"), checks, parsed.metrics)
    if not checks:
        return Verdict(Status.FAILED, "the report has no checks", checks, parsed.metrics)
    if failed:
        return Verdict(Status.FAILED, _clip(_failed_message(failed)), checks, parsed.metrics)
    return Verdict(Status.PASSED, _clip(note) if note else None, checks, parsed.metrics)


def _failed_message(failed: list[CheckResult]) -> str:
    first = failed[0]
    msg = f'check "{first.name}" failed' + (f": {first.message}" if first.message else "")
    if len(failed) > 1:
        msg += f" (and {len(failed) - 1} more failed check{'s' if len(failed) > 2 else ''})"
    return msg


def _apply_check_rules(check: CheckResult) -> CheckResult:
    if check.assertions == 0:
        note = "asserted nothing"
        message = f"{note}; {check.message}" if check.message and check.passed is False else note
        return check.model_copy(update={"passed": False, "message": message})
    return check


_TRACEBACK_START = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(: .*)?$")
_ERRORISH = re.compile(
    r"(error|exception|fatal|panic|failed|failure|not found|denied|refused|abort|cannot|can't|unable)",
    re.IGNORECASE,
)


def explain_failure(output: str) -> str:
    """The line(s) that explain a crash: a Python traceback's final exception line,
    else the last lines that look like an error, else the last non-empty line."""
    lines = [ln.rstrip() for ln in output.splitlines()]
    if _TRACEBACK_START in lines:
        start = len(lines) - 1 - lines[::-1].index(_TRACEBACK_START)
        for ln in reversed(lines[start + 1 :]):
            if ln and not ln.startswith((" ", "\t")) and _EXCEPTION_LINE.match(ln):
                return _clip(ln)
    errorish = [ln.strip() for ln in lines if ln.strip() and _ERRORISH.search(ln)]
    if errorish:
        return _clip(" | ".join(errorish[-3:]))
    tail = [ln.strip() for ln in lines if ln.strip()]
    return _clip(tail[-1]) if tail else ""


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"
