"""The runner's rules over a report, pinned message for message: every branch of the verdict, the counts
at one and two, exit code zero against non-zero, the crash line and its place, and text no file can hold."""

from __future__ import annotations

from pathlib import Path

from evalrun.reports_in.parsed import ParsedReport, Skip
from evalrun.reports_in.rules import Verdict, crash_place, explain_failure, judge
from evalrun.results import CheckResult, Status
from evalrun.text import MESSAGE_LIMIT

TRACE = "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nKeyError: 'tenant'\n"


def _c(name: str, assertions: int = 1, passed: bool = True, message: str | None = None, **kw) -> CheckResult:
    return CheckResult(name=name, assertions=assertions, passed=passed, message=message, **kw)


def _p(*checks: CheckResult, **kw) -> ParsedReport:
    return ParsedReport(checks=list(checks), **{"metrics": {}, **kw})


def _v(verdict: Verdict) -> tuple[Status, str | None]:
    return verdict.status, verdict.message


# --- no report ------------------------------------------------------------------------


def test_no_report_with_exit_zero() -> None:
    assert _v(judge(None, None, 0, "")) == (Status.ERROR, "exited 0 but wrote no valid report")
    assert _v(judge(None, "no report was written", 0, "x")) == (Status.ERROR, "exited 0 but no report was written")
    assert _v(judge(None, "invalid report: checks: bad", 0, "")) == (Status.ERROR, "invalid report: checks: bad")
    verdict = judge(None, "invalid report: x", 0, "")
    assert (verdict.checks, verdict.metrics, tuple(verdict.skips)) == ([], {}, ())


def test_no_report_with_a_crash() -> None:
    assert _v(judge(None, "no report was written", 1, TRACE)) == (Status.ERROR, "exited 1: KeyError: 'tenant'")
    assert _v(judge(None, "invalid report: bad", 2, TRACE)) == (
        Status.ERROR, "exited 2: KeyError: 'tenant'; invalid report: bad")
    assert _v(judge(None, None, 2, TRACE)) == (Status.ERROR, "exited 2: KeyError: 'tenant'")
    assert _v(judge(None, "no report was written", 1, "")) == (Status.ERROR, "exited 1 (no report was written)")
    assert _v(judge(None, None, None, "")) == (Status.ERROR, "exited None (None)")


def test_no_report_with_a_crash_in_the_eval_folder_names_the_place(tmp_path: Path) -> None:
    (tmp_path / "score.py").write_text("")
    output = f'Traceback (most recent call last):\n  File "{tmp_path}/score.py", line 12, in main\nValueError: no\n'
    assert _v(judge(None, None, 1, output, tmp_path, "evals/x")) == (
        Status.ERROR, "exited 1: ValueError: no (at evals/x/score.py:12)")
    assert judge(None, None, 1, output).message == "exited 1: ValueError: no"  # no folder: no place
    assert judge(None, None, 1, "", tmp_path).message == "exited 1 (None)"  # nothing explains: no place either


# --- a report ----------------------------------------------------------------------------


def test_passing_report_keeps_checks_metrics_and_skips() -> None:
    skips = [Skip("s", "why")]
    verdict = judge(_p(_c("a"), metrics={"m": 1}, skips=skips, source="TAP"), None, 0, "")
    assert verdict == Verdict(Status.PASSED, "skipped in TAP: s (why)", [_c("a")], {"m": 1}, skips)
    assert judge(_p(_c("a")), None, 0, "") == Verdict(Status.PASSED, None, [_c("a")], {})


def test_notes_join_the_skipped_note() -> None:
    verdict = judge(_p(_c("a"), notes=["n1", "n2"]), None, 0, "")
    assert _v(verdict) == (Status.PASSED, "n1; n2")


def test_one_assertion_is_enough_zero_fails_the_check() -> None:
    verdict = judge(_p(_c("one", 1), _c("zero", 0)), None, 0, "")
    assert verdict.checks == [_c("one", 1), _c("zero", 0, False, "asserted nothing")]
    assert _v(verdict) == (Status.FAILED, 'check "zero" failed: asserted nothing')


def test_zero_assertions_and_the_scorers_own_message() -> None:
    checks = judge(_p(_c("a", 0, False, "boom"), _c("b", 0, False, "asserted nothing, said the SDK"),
                      _c("c", 0, True, "passed, it says"), _c("d", 0, False)), None, 0, "").checks
    assert [c.message for c in checks] == ["asserted nothing; boom", "asserted nothing, said the SDK",
                                           "asserted nothing", "asserted nothing"]
    assert [c.passed for c in checks] == [False] * 4


def test_failed_checks_are_counted_in_words() -> None:
    one = judge(_p(_c("a", passed=False, message="m")), None, 0, "")
    two = judge(_p(_c("a", passed=False), _c("b", passed=False)), None, 0, "")
    three = judge(_p(_c("a", passed=False, message="x\ny"), _c("b", passed=False), _c("c", passed=False)), None, 0, "")
    assert one.message == 'check "a" failed: m'
    assert two.message == 'check "a" failed (and 1 more failed check)'
    assert three.message == 'check "a" failed: x y (and 2 more failed checks)'


def test_a_name_with_line_breaks_is_folded_in_the_message_only() -> None:
    verdict = judge(_p(_c("a\r\nb", passed=False)), None, 0, "")
    assert verdict.message == 'check "a b" failed' and verdict.checks[0].name == "a\r\nb"
    assert judge(_p(_c("a  b", passed=False)), None, 0, "").message == 'check "a  b" failed'


def test_duplicate_names() -> None:
    verdict = judge(_p(_c("x\ny"), _c("z"), _c("x\ny"), metrics={"m": 2}), None, 0, "")
    assert verdict == Verdict(Status.ERROR, 'duplicate check name "x y" in the report',
                              [_c("x\ny"), _c("z"), _c("x\ny")], {"m": 2})


def test_a_problem_fails_and_says_the_exit_code() -> None:
    assert _v(judge(_p(_c("a"), problem="planned 3, ran 2"), None, 0, "")) == (Status.FAILED, "planned 3, ran 2")
    assert _v(judge(_p(_c("a"), problem="Bail out!"), None, 1, "")) == (Status.FAILED, "Bail out! (exited 1)")


def test_failed_checks_with_a_non_zero_exit() -> None:
    verdict = judge(_p(_c("a", passed=False, message="m"), _c("b")), None, 1, TRACE)
    assert _v(verdict) == (Status.FAILED, 'check "a" failed: m (exited 1)')


def test_node_file_that_failed_to_load_says_why() -> None:
    output = "file:///x/a.test.js:3\nSyntaxError: Unexpected token '}'\n"
    verdict = judge(_p(_c("a.test.js", passed=False, message="test failed")), None, 1, output)
    assert verdict.message == "check \"a.test.js\" failed: test failed: SyntaxError: Unexpected token '}' (exited 1)"
    other = judge(_p(_c("a", passed=False, message="other")), None, 1, output)
    assert other.message == 'check "a" failed: other (exited 1)'
    silent = judge(_p(_c("a", passed=False, message="test failed")), None, 1, "")
    assert silent.message == 'check "a" failed: test failed (exited 1)'


def test_every_check_passed_but_the_scorer_exited_non_zero(tmp_path: Path) -> None:
    (tmp_path / "score.py").write_text("")
    output = f'Traceback (most recent call last):\n  File "{tmp_path}/score.py", line 3, in main\nOSError: gone\n'
    verdict = judge(_p(_c("a"), _c("b"), metrics={"m": 1}), None, 2, output, tmp_path, ".")
    assert verdict == Verdict(Status.ERROR, "exited 2 although its report says 2 of 2 checks passed: OSError: gone "
                              "(at score.py:3)", [_c("a"), _c("b")], {"m": 1})
    assert judge(_p(_c("a")), None, 2, output).message == (
        "exited 2 although its report says 1 of 1 checks passed: OSError: gone")
    assert judge(_p(_c("a")), None, 2, "").message == "exited 2 although its report says 1 of 1 checks passed"
    assert judge(_p(_c("a")), None, 2, "", tmp_path).message == "exited 2 although its report says 1 of 1 checks passed"


def test_no_checks_skipped_and_skip_all() -> None:
    assert _v(judge(_p(), None, 0, "")) == (Status.FAILED, "the report has no checks")
    assert _v(judge(_p(skips=[Skip("a", "r"), Skip("b")], source="JUnit"), None, 0, "")) == (
        Status.SKIPPED, "everything skipped in JUnit: a (r); b")
    assert _v(judge(_p(skip_all="no db", source="TAP"), None, 0, "")) == (
        Status.SKIPPED, "everything skipped in TAP: no db")
    # skip_all with checks is no skip
    assert _v(judge(_p(_c("a"), skip_all="no db", source="TAP"), None, 0, "")) == (
        Status.PASSED, "everything skipped in TAP: no db")


def test_skip_all_without_a_note_says_skipped() -> None:
    class Quiet(ParsedReport):
        def skipped_note(self) -> str | None:
            return None

    assert _v(judge(Quiet(checks=[], metrics={}, skip_all="why"), None, 0, "")) == (Status.SKIPPED, "skipped: why")


def test_every_check_skipped_without_skip_all_lists_them() -> None:
    class Quiet(ParsedReport):
        def skipped_note(self) -> str | None:
            return None

    verdict = judge(Quiet(checks=[], metrics={}, skips=[Skip("a", "r")], source="JUnit"), None, 0, "")
    assert _v(verdict) == (Status.SKIPPED, "everything skipped in JUnit: a (r)")
    assert verdict.skips == [Skip("a", "r")]


def test_messages_are_cut_to_the_message_limit() -> None:
    verdict = judge(_p(_c("a", passed=False, message="m" * 2000)), None, 0, "")
    assert len(verdict.message) == MESSAGE_LIMIT and verdict.message.endswith("m…")
    note = judge(_p(_c("a"), notes=["n" * 2000]), None, 0, "").message
    assert note == "n" * (MESSAGE_LIMIT - 1) + "…"


# --- text a results file cannot hold ---------------------------------------------------


def test_a_lone_surrogate_in_a_name_fails_the_eval_naming_it() -> None:
    verdict = judge(_p(_c("ok"), _c("b\ud800", passed=False), metrics={"m": 1}), None, 0, "")
    assert verdict == Verdict(Status.ERROR, "invalid report: checks[1].name 'b\\ud800' is not valid Unicode "
                              "(a lone surrogate \\ud800 at character 2); name checks with text UTF-8 can hold", [], {})
    long = judge(_p(_c("n" * 100 + "\udfff")), None, 0, "").message
    assert long.startswith("invalid report: checks[0].name '" + "n" * 60 + "' is not valid")
    assert "\\udfff at character 101" in long


def test_a_lone_surrogate_elsewhere_is_replaced() -> None:
    verdict = judge(_p(_c("a", passed=False, message="m\ud800", evidence="e\udbff"),
                       metrics={"k\ud800": "v\udc00", "n": 1}), None, 0, "")
    assert verdict.checks == [_c("a", passed=False, message="m\ufffd", evidence="e\ufffd")]
    assert verdict.metrics == {"k\ufffd": "v\ufffd", "n": 1}
    assert verdict.message == 'check "a" failed: m\ufffd'
    clean = _p(_c("a", message="m", evidence="e"), metrics={"k": "v"})
    same = judge(clean, None, 0, "")
    assert same.checks[0] is clean.checks[0] and same.metrics is clean.metrics
    only_key = judge(_p(_c("a"), metrics={"k\ud800": 1}), None, 0, "")
    assert only_key.metrics == {"k\ufffd": 1}
    only_evidence = judge(_p(_c("a", evidence="\ud800")), None, 0, "").checks[0]
    assert (only_evidence.message, only_evidence.evidence) == (None, "\ufffd")


def test_a_crash_line_with_a_surrogate_is_replaced() -> None:
    assert judge(None, None, 1, "boom \ud800").message == "exited 1: boom \ufffd"


# --- the line that explains a crash ----------------------------------------------------------


def test_a_traceback_gives_its_exception_line() -> None:
    assert explain_failure(TRACE) == "KeyError: 'tenant'"
    chained = TRACE + "\nDuring handling...\n\nTraceback (most recent call last):\n  File \"y\", line 2\nValueError\n"
    assert explain_failure(chained) == "ValueError"
    indented = "Traceback (most recent call last):\n  File x\n    raise E\n\tE: tab\nE: final\nafter it\n"
    assert explain_failure(indented) == "E: final"
    no_exception = "Traceback (most recent call last):\n  File x\n  not an exception line: 1 2\n"
    assert explain_failure(no_exception) == "not an exception line: 1 2"


def test_a_javascript_error_line() -> None:
    assert explain_failure("x\nTypeError: a is undefined\n    at f (/x/a.js:1:2)\n") == "TypeError: a is undefined"


def test_error_looking_lines_the_last_three_joined() -> None:
    output = "error one\nfine\nfailed two\ncannot three\nrefused four\n    at f (/x/a.js:1:2) error\n"
    assert explain_failure(output) == "failed two | cannot three | refused four"
    assert explain_failure("  denied  \n") == "denied"


def test_otherwise_the_last_line_that_is_no_stack_frame() -> None:
    assert explain_failure("first\nlast\n\n") == "last"
    assert explain_failure("first\n    at f (/x/a.js:1:2)\n") == "first"
    assert explain_failure("    at f (/x/a.js:1:2)\n") == "at f (/x/a.js:1:2)"
    assert explain_failure("") == "" and explain_failure("\n \n") == ""
    assert explain_failure("x" * 2000) == "x" * (MESSAGE_LIMIT - 1) + "…"


# --- where it crashed --------------------------------------------------------------------


def _frames(*lines: str) -> str:
    return "Traceback (most recent call last):\n" + "".join(f"{ln}\n" for ln in lines) + "E: x\n"


def test_the_innermost_python_frame_in_the_eval_folder(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    output = _frames(f'  File "{tmp_path}/score.py", line 1, in main', '  File "lib/util.py", line 7, in f',
                     '  File "/usr/lib/python3/json/__init__.py", line 9, in loads')
    assert crash_place(output, tmp_path) == "lib/util.py:7"
    assert crash_place(output, tmp_path, "evals/x/") == "evals/x/lib/util.py:7"
    assert crash_place(output, tmp_path, ".") == "lib/util.py:7"
    # only the last traceback is read
    assert crash_place(output + _frames(f'  File "{tmp_path}/b.py", line 4'), tmp_path) == "b.py:4"


def test_frames_in_installed_packages_and_outside_are_passed_over(tmp_path: Path) -> None:
    output = _frames(f'  File "{tmp_path}/score.py", line 2, in main',
                     f'  File "{tmp_path}/.venv/lib/site-packages/p.py", line 5, in f',
                     f'  File "{tmp_path}/node_modules/p.py", line 6, in g')
    assert crash_place(output, tmp_path) == "score.py:2"
    assert crash_place(_frames('  File "/elsewhere/x.py", line 1'), tmp_path) is None
    assert crash_place("no traceback\n", tmp_path) is None


def test_the_first_javascript_frame_in_the_eval_folder(tmp_path: Path) -> None:
    output = (f"Error: x\n    at f (node:internal/x:1:1)\n    at g ({tmp_path}/a.test.js:12:5)\n"
              f"    at file://{tmp_path}/b.js:3:1\n")
    assert crash_place(output, tmp_path, "evals/js") == "evals/js/a.test.js:12"
    assert crash_place(f"    at file://{tmp_path}/b.ts:3:1\n", tmp_path) == "b.ts:3"


def test_a_symlink_loop_has_no_place_and_the_crash_is_still_explained(tmp_path: Path) -> None:
    # A scorer can make one in its folder and name it in a traceback; Python 3.11's resolve() raises
    # RuntimeError on it, which made the eval "evalrun could not judge it" instead of its crash line.
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    (tmp_path / "score.py").write_text("")
    output = _frames('  File "loop/x.py", line 1, in m', f'  File "{tmp_path}/score.py", line 5')
    assert crash_place(output, tmp_path) == "score.py:5"
    assert crash_place(_frames('  File "loop/x.py", line 1'), tmp_path) is None
    assert crash_place(_frames(f'  File "{loop}/score.py", line 1'), loop) is None
    assert judge(None, None, 1, _frames('  File "loop/x.py", line 1'), tmp_path, "evals/x").message == "exited 1: E: x"


def test_an_exception_line_right_after_the_traceback_header() -> None:
    assert explain_failure("Traceback (most recent call last):\nKeyboardInterrupt\nsomething failed later\n") == "KeyboardInterrupt"


def test_a_verdict_is_a_value() -> None:
    import pytest

    verdict = judge(_p(_c("a")), None, 0, "")
    with pytest.raises(AttributeError):
        verdict.status = Status.FAILED  # type: ignore[misc]
