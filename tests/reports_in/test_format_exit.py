"""``format = "exit"``: one check named after the eval, passed when the program exits 0, its error lines as the message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.reports_in.exit_code import parse_exit
from evalrun.reports_in.rules import judge
from evalrun.results import Status
from evalrun.text import EVIDENCE_LIMIT, MESSAGE_LIMIT


def test_exit_0_is_one_passing_check_of_one_assertion_named_after_the_eval() -> None:
    parsed = parse_exit("types", 0, "src/a.ts(1,7): error TS2322: noise that a clean run would not print\n")
    assert [(c.name, c.assertions, c.passed, c.message) for c in parsed.checks] == [("types", 1, True, None)]
    verdict = judge(parsed, None, 0, "", None, "")
    assert verdict.status is Status.PASSED


@pytest.mark.parametrize(
    ("output", "message"),
    [
        # tsc
        ("src/a.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.\n"
         "src/a.ts(2,5): error TS2322: Type 'number' is not assignable to type 'string'.\n\n"
         "Found 2 errors in the same file, starting at: src/a.ts:1\n",
         "src/a.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.; "
         "src/a.ts(2,5): error TS2322: Type 'number' is not assignable to type 'string'."),
        # mypy
        ("a.py:3: error: Incompatible types in assignment  [assignment]\nFound 1 error in 1 file (checked 1 source file)\n",
         "a.py:3: error: Incompatible types in assignment [assignment]"),
        # ruff
        ("a.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n",
         "a.py:1:8: F401 [*] `os` imported but unused"),
        # eslint
        ("\n/work/app/a.js\n  3:7  error  'x' is assigned a value but never used  no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)\n",
         "3:7 error 'x' is assigned a value but never used no-unused-vars"),
        # cargo check: the error line, not the compiler's closing words
        ("    Checking app v0.1.0\nerror[E0308]: mismatched types\n --> src/main.rs:2:18\n"
         "error: could not compile `app` (bin \"app\") due to 1 previous error\n",
         "error[E0308]: mismatched types; error: could not compile `app` (bin \"app\") due to 1 previous error"),
        # no error line at all: the last line says it
        ("checking...\nsomething went sideways\n", "something went sideways"),
        ("", "no output"),
    ],
)
def test_a_non_zero_exit_fails_the_check_with_the_error_lines(output: str, message: str) -> None:
    parsed = parse_exit("lint", 2, output)
    (check,) = parsed.checks
    assert (check.name, check.assertions, check.passed, check.message) == ("lint", 1, False, message)
    verdict = judge(parsed, None, 2, output, None, "")
    assert verdict.status is Status.FAILED and verdict.message == f'check "lint" failed: {message} (exited 2)'


def test_many_error_lines_show_three_and_say_how_many_more_and_keep_all_in_the_evidence() -> None:
    output = "".join(f"src/f{i}.ts({i},1): error TS1005: ';' expected.\n" for i in range(1, 11))
    (check,) = parse_exit("types", 1, output).checks
    assert check.message.count("error TS1005") == 3 and check.message.endswith("(and 7 more error lines)"), check.message
    assert check.evidence is not None and check.evidence.count("error TS1005") == 10


def test_the_message_is_redacted_before_it_is_cut_and_holds_no_colour_code() -> None:
    secret = "sk-test-" + "x" * 40
    output = f"\x1b[31msrc/a.ts(1,7): error TS2322: token {secret} is not a number\x1b[39m\n"
    (check,) = parse_exit("types", 1, output, secrets=[secret]).checks
    assert secret not in check.message and secret[:16] not in (check.evidence or "")
    assert "\x1b" not in check.message and check.message.startswith("src/a.ts(1,7): error TS2322: token ")


@given(output=st.text(max_size=3000), code=st.integers(min_value=-64, max_value=255))
@settings(max_examples=200, deadline=None)
def test_any_output_gives_one_check_and_a_one_line_bounded_message(output: str, code: int) -> None:
    parsed = parse_exit("e", code, output)
    (check,) = parsed.checks
    assert check.name == "e" and check.assertions == 1 and check.passed is (code == 0)
    if code:
        assert check.message is not None and "\n" not in check.message and len(check.message) <= MESSAGE_LIMIT
        assert check.evidence is None or len(check.evidence.encode()) <= EVIDENCE_LIMIT + 60
