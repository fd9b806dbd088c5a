"""Reading pytest's report log (``pytest --report-log=FILE``, the pytest-reportlog plugin) into checks.

Where pytest's JUnit XML loses what a gate needs, its report log keeps it: one
JSON object a line, a ``TestReport`` per phase (setup, call, teardown) of each
test, a ``SubTestReport`` per subtest (pytest 9's ``subtests`` fixture), a
``CollectReport`` per collected file and a closing ``SessionFinish``. So:

- each test (its ``nodeid``, ``tests/test_x.py::test_adds[fast]``) is a check,
  named by that id; its assertions are its subtests (at least 1), so removing
  a subtest is "asserts less" — the count JUnit cannot give;
- a phase that failed fails it: the message is the crash line pytest kept
  (``reprcrash.message``), a failed setup or teardown says so (``error:
  failed on teardown: RuntimeError: ...``), a failed subtest names its
  context (``subtest case (i=1): assert 1 != 1``);
- a test skipped in setup or call is not a check, listed with its reason; an
  xfail (``wasxfail``) that failed is a passing check ``xfail bug 12: fails
  as expected``, one that passed says ``passes now; remove the xfail``;
- a file that fails to collect, or a log without ``SessionFinish`` (pytest
  did not finish), fails the eval with what it says.

The file is read bounded (``REPORT_LIMIT``, ``CHECK_LIMIT``); a line that is
not a JSON object is refused with one line naming the file and the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalrun.errors import ReportError
from evalrun.files import FileReadError, read_bounded
from evalrun.reports_in.parsed import (
    CHECK_LIMIT,
    NAME_LIMIT,
    REPORT_LIMIT,
    REPORT_WHAT,
    ParsedReport,
    Skip,
    expected_failure_note,
)
from evalrun.results import CheckResult
from evalrun.secrets import scrub
from evalrun.text import one_line, shorten, truncate

_MARGIN = re.compile(r"^E\s+")  # pytest marks the lines of an error with "E   "


@dataclass
class _Test:
    failures: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    skip: str | None = None
    xfail: str | None = None  # the reason, when the test is an xfail
    xfailed: bool = False  # ... and it failed as expected
    subtests: int = 0


def parse_reportlog(path: Path, label: str | None = None, secrets: Iterable[str] = ()) -> ParsedReport:
    """Translate the report log at ``path``; ``label`` names it in messages (default: its name)."""
    name = label or path.name
    secrets = tuple(secrets)
    try:
        raw = read_bounded(path, REPORT_LIMIT, REPORT_WHAT)
    except FileReadError as exc:
        if exc.missing:
            raise ReportError(f"report log {name}: no such file; pytest did not write it - "
                              f"check --report-log and the eval's reportlog path") from None
        raise ReportError(f"report log {name}: {exc.reason}; make pytest write it with --report-log") from None
    tests: dict[str, _Test] = {}
    problems: list[str] = []
    finished = False
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise ReportError(f"report log {name}: line {number}: not JSON; point reportlog = at the file "
                              f"pytest --report-log writes") from None
        if not isinstance(record, dict):
            raise ReportError(f"report log {name}: line {number}: not a JSON object; point reportlog = at the file "
                              f"pytest --report-log writes")
        kind = record.get("$report_type")
        if kind == "SessionFinish":
            finished = True
        elif kind == "CollectReport" and record.get("outcome") == "failed":
            where = _text(record.get("nodeid")) or "the session"
            problems.append(f"collecting {where} failed: {_crash(record.get('longrepr'))}")
        elif kind in ("TestReport", "SubTestReport"):
            nodeid = shorten(scrub(_text(record.get("nodeid")), secrets), NAME_LIMIT) or f"test {len(tests) + 1}"
            test = tests.get(nodeid)
            if test is None:
                if len(tests) >= CHECK_LIMIT:
                    raise ReportError(f"report log {name}: line {number}: more than {CHECK_LIMIT:,} tests, "
                                      f"the most evalrun reads from one report")
                test = tests[nodeid] = _Test()
            _add(test, record, kind == "SubTestReport", secrets)
    checks: list[CheckResult] = []
    skips: list[Skip] = []
    for nodeid, test in tests.items():
        if test.skip is not None and not test.failures:
            skips.append(Skip(nodeid, one_line(test.skip, 200)))
            continue
        assertions = max(test.subtests, 1)
        if test.failures:
            checks.append(CheckResult(name=nodeid, assertions=assertions, passed=False,
                                      message=one_line("; ".join(test.failures)),
                                      evidence=truncate("\n".join(test.evidence)) if test.evidence else None))
        elif test.xfail is not None:
            note = expected_failure_note("xfail", test.xfail, failed=test.xfailed)
            checks.append(CheckResult(name=nodeid, assertions=assertions, passed=True, message=one_line(note)))
        else:
            checks.append(CheckResult(name=nodeid, assertions=assertions, passed=True))
    problem = None
    if problems:
        problem = scrub(one_line("; ".join(problems)), secrets)
    elif not finished:
        problem = "the report log has no SessionFinish: pytest did not finish the run"
    elif not checks and not skips:
        problem = "no test in the report log"
    return ParsedReport(checks=checks, metrics={}, problem=problem, skips=skips, source="the report log")


def _add(test: _Test, record: dict[str, Any], subtest: bool, secrets: tuple[str, ...]) -> None:
    outcome = record.get("outcome")
    when = record.get("when")
    longrepr = record.get("longrepr")
    wasxfail = record.get("wasxfail")
    if subtest:
        test.subtests += 1
        if outcome == "failed":
            context = _context(record.get("_subtest.context"))
            test.failures.append(scrub(f"subtest{' ' + context if context else ''}: {_crash(longrepr)}", secrets))
        return
    if isinstance(wasxfail, str) and when == "call":
        test.xfail = scrub(wasxfail, secrets)
        test.xfailed = outcome == "skipped"
        return
    if outcome == "skipped" and when in ("setup", "call"):
        test.skip = scrub(_skip_reason(longrepr), secrets)
    elif outcome == "failed":
        crash = scrub(_crash(longrepr), secrets)
        if when == "call":
            if not (test.subtests and crash.startswith("contains ") and "failed subtest" in crash):
                test.failures.append(crash)  # pytest's summary of failed subtests repeats what they said
        else:
            test.failures.append(f"error: failed on {when}: {crash}")
        if where := _where(longrepr):
            test.evidence.append(scrub(where, secrets))


def _crash(longrepr: Any) -> str:
    """The line pytest kept of a failure: ``reprcrash.message``, else the text's last line."""
    if isinstance(longrepr, dict):
        crash = longrepr.get("reprcrash")
        if isinstance(crash, dict) and isinstance(crash.get("message"), str):
            return _first_line(crash["message"])  # "AssertionError: assert 1 != 1", not pytest's "+ where" lines
        for key in ("longrepr", "reprtraceback"):
            if isinstance(longrepr.get(key), str):
                return _last_line(longrepr[key])
        return "failed"
    if isinstance(longrepr, list) and len(longrepr) == 3:
        return one_line(_text(longrepr[2]), 300)
    if isinstance(longrepr, str):
        return _last_line(longrepr)
    return "failed"


def _where(longrepr: Any) -> str:
    if isinstance(longrepr, dict) and isinstance(crash := longrepr.get("reprcrash"), dict):
        path, line, message = _text(crash.get("path")), crash.get("lineno"), _text(crash.get("message"))
        if path:
            return f"{path}:{line}: {message}" if isinstance(line, int) else f"{path}: {message}"
    return ""


def _skip_reason(longrepr: Any) -> str:
    """pytest keeps a skip as [path, line, "Skipped: reason"]."""
    reason = _text(longrepr[2]) if isinstance(longrepr, list) and len(longrepr) == 3 else _crash(longrepr)
    return reason.removeprefix("Skipped: ").strip()


def _context(context: Any) -> str:
    if not isinstance(context, dict):
        return ""
    msg = _text(context.get("msg"))
    kwargs = context.get("kwargs")
    args = ", ".join(f"{k}={_text(v)}" for k, v in kwargs.items()) if isinstance(kwargs, dict) else ""
    return " ".join(part for part in (msg, f"({args})" if args else "") if part)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return one_line(lines[0], 300) if lines else "failed"


def _last_line(text: str) -> str:
    """The last line of pytest's text, without its ``E   `` margin."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return one_line(_MARGIN.sub("", lines[-1]), 300) if lines else "failed"
