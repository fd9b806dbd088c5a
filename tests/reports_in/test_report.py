"""The runner's rules over a report, and the line that explains a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.errors import ReportError
from evalrun.reports_in.json_report import read_json_report
from evalrun.reports_in.parsed import ParsedReport, Skip
from evalrun.reports_in.rules import explain_failure, judge
from evalrun.results import CheckResult, Status


def _parsed(*checks: tuple[str, int, bool], problem: str | None = None) -> ParsedReport:
    return ParsedReport(checks=[CheckResult(name=n, assertions=a, passed=p) for n, a, p in checks], metrics={}, problem=problem)


def test_all_passing_report_with_exit_zero_passes() -> None:
    v = judge(_parsed(("a", 2, True), ("b", 1, True)), None, 0, "")
    assert v.status is Status.PASSED and v.message is None


def test_zero_assertions_fails_the_check_even_if_it_says_passed() -> None:
    v = judge(_parsed(("a", 0, True)), None, 0, "")
    assert v.status is Status.FAILED
    assert v.checks[0].passed is False and v.checks[0].message == "asserted nothing"
    assert v.message == 'check "a" failed: asserted nothing'


def test_no_checks_fails_the_eval() -> None:
    v = judge(_parsed(), None, 0, "")
    assert (v.status, v.message) == (Status.FAILED, "the report has no checks")


def test_nonzero_exit_fails_even_when_every_check_passed() -> None:
    v = judge(_parsed(("a", 1, True)), None, 3, "Traceback (most recent call last):\n  File x\nRuntimeError: late crash\n")
    assert v.status is Status.ERROR
    assert v.message == "exited 3 although its report says 1 of 1 checks passed: RuntimeError: late crash"


def test_zero_exit_without_report_fails() -> None:
    v = judge(None, "no report was written to $EVALRUN_REPORT", 0, "")
    assert v.status is Status.ERROR
    assert v.message == "exited 0 but no report was written to $EVALRUN_REPORT"


def test_duplicate_check_names_are_an_error() -> None:
    v = judge(_parsed(("a", 1, True), ("a", 1, True)), None, 0, "")
    assert v.status is Status.ERROR and 'duplicate check name "a"' in v.message


def test_format_problem_fails_the_eval() -> None:
    v = judge(_parsed(("a", 1, True), problem="planned 3, ran 2"), None, 0, "")
    assert (v.status, v.message) == (Status.FAILED, "planned 3, ran 2")


def test_failed_check_message_counts_the_rest() -> None:
    parsed = ParsedReport(
        checks=[
            CheckResult(name="a", assertions=1, passed=False, message="expected 3, got 2"),
            CheckResult(name="b", assertions=1, passed=False),
            CheckResult(name="c", assertions=1, passed=False),
        ],
        metrics={},
    )
    assert judge(parsed, None, 0, "").message == 'check "a" failed: expected 3, got 2 (and 2 more failed checks)'


def test_explain_python_traceback_gives_the_exception_line_not_the_frames() -> None:
    out = (
        "starting\n"
        "Traceback (most recent call last):\n"
        '  File "score.py", line 3, in <module>\n'
        "    rows['tenant']\n"
        "KeyError: 'tenant'\n"
        "\n"
    )
    assert explain_failure(out) == "KeyError: 'tenant'"


def test_explain_chained_traceback_gives_the_last_exception() -> None:
    out = (
        "Traceback (most recent call last):\n  File \"a\", line 1\nValueError: first\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n  File \"b\", line 2\n    x()\npsycopg.OperationalError: connection refused\n"
    )
    assert explain_failure(out) == "psycopg.OperationalError: connection refused"


def test_explain_other_languages_picks_error_looking_lines() -> None:
    out = "compiling\nok 1\nnode:internal/x:1\nError: Cannot find module 'left-pad'\n    at Function.resolve (node:1:2)\n    at run (node:3:4)\n"
    assert explain_failure(out) == "Error: Cannot find module 'left-pad'"


def test_explain_falls_back_to_last_line() -> None:
    assert explain_failure("one\ntwo\n\n") == "two"
    assert explain_failure("") == ""


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"{not json", "invalid report: not JSON"),
        (json.dumps({"checks": [{"name": "a", "assertions": -1, "passed": True}]}).encode(), "checks[0].assertions: -1 is less than the minimum of 0"),
        (json.dumps({"checks": [{"name": "a", "passed": True}]}).encode(), "'assertions' is a required property"),
        (json.dumps({"checks": [{"name": "a", "assertions": 1, "passed": "yes"}]}).encode(), "checks[0].passed: 'yes' is not of type 'boolean'"),
        (json.dumps({"checks": [], "extra": 1}).encode(), "Additional properties are not allowed ('extra' was unexpected)"),
        (json.dumps([1]).encode(), "top level: [1] is not of type 'object'"),
        (b"\xff\xfe", "invalid report: not JSON"),
    ],
)
def test_invalid_reports_say_what_is_wrong(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "report.json"
    path.write_bytes(content)
    with pytest.raises(ReportError) as info:
        read_json_report(path)
    assert expected in str(info.value)


def test_missing_report(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"no report was written to \$EVALRUN_REPORT"):
        read_json_report(tmp_path / "nope.json")


@pytest.mark.parametrize("name", ["report", "manifest", "results"])
def test_every_committed_schema_is_fresh(name: str) -> None:
    """Regenerate with: python -m evalrun.commands.schema --write"""
    from evalrun.commands.schema import generate_schema, render_schema, schema_path

    assert schema_path(name).read_text(encoding="utf-8") == render_schema(generate_schema(name)), (
        f"{schema_path(name)} is stale; regenerate it with: python -m evalrun.commands.schema --write"
    )


VITEST_BROKEN_CONFIG = """failed to load config from /tmp/vx/vitest.config.ts

\x1b[31m⎯⎯⎯⎯⎯⎯⎯\x1b[39m\x1b[1m\x1b[41m Startup Error \x1b[49m\x1b[22m\x1b[31m⎯⎯⎯⎯⎯⎯⎯⎯\x1b[39m
Error: Build failed with 1 error:

[PARSE_ERROR] Expected `}` but found `EOF`
   ╭─[ vitest.config.ts:2:63 ]
   │
 2 │ export default defineConfig({ test: { include: ['tests/**'] }
───╯

    at aggregateBindingErrorsIntoJsError (file:///n/rolldown/dist/shared/error-z4CTM_u3.mjs:110:18)
    at unwrapBindingResult (file:///n/rolldown/dist/shared/error-z4CTM_u3.mjs:78:128)
    at async createVitest (file:///n/vitest/dist/chunks/cli-api.B0Pz1_R7.js:14288:18) {
  errors: [Getter/Setter]
}
"""


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        (VITEST_BROKEN_CONFIG, "[PARSE_ERROR] Expected `}` but found `EOF`"),  # vitest 4 (rolldown), verbatim
        ("x.js:1\nTypeError: cfg.map is not a function\n    at load (x.js:1:5)\n    at runErrorHandler (y.js:2:1)\n",
         "TypeError: cfg.map is not a function"),
        ("node:internal\nError [ERR_MODULE_NOT_FOUND]: Cannot find package 'vitest'\n    at packageResolve (node:1:2)\n",
         "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'vitest'"),
        ("src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n",
         "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."),
    ],
)
def test_explain_javascript_crash_finds_the_error_line_not_a_stack_frame(out: str, expected: str) -> None:
    assert explain_failure(out) == expected


def test_explain_never_picks_a_stack_frame_among_error_looking_lines() -> None:
    out = "something broke badly\n    at handleErrorFrame (x.js:1:1)\n    at abortAll (x.js:2:2)\n"
    assert explain_failure(out) == "something broke badly"


def test_every_test_skipped_is_a_skip_with_the_reasons() -> None:
    """pytest -k selecting only skipped tests: not checked (exit 4), never "no checks" (exit 1)."""
    parsed = ParsedReport(checks=[], metrics={}, skips=[Skip("t.test_a", "no gpu"), Skip("t.test_b")], source="JUnit")
    v = judge(parsed, None, 0, "")
    assert (v.status, v.message) == (Status.SKIPPED, "everything skipped in JUnit: t.test_a (no gpu); t.test_b")
