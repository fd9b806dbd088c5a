"""JUnit XML files become checks: a real pytest --junitxml run, and one asset per case."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalrun.errors import ReportError
from evalrun.text import EVIDENCE_LIMIT
from evalrun.reports_in.junit import parse_junit

from harness import PRODUCERS, TESTS

ASSETS = TESTS / "assets" / "junit"
# The pytest under test loads no third-party plugins: they change nothing in its
# JUnit file, and this venv's (hypothesis above all) cost it a second of CPU.
NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def test_real_pytest_junitxml(tmp_path: Path) -> None:
    shutil.copy(PRODUCERS / "pytest_sample.py", tmp_path / "test_sample.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | NO_PLUGINS
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--junitxml", str(tmp_path / "results.xml"), "test_sample.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr

    report = parse_junit(tmp_path / "results.xml")

    assert report.problem is None
    assert [(c.name, c.assertions, c.passed) for c in report.checks] == [
        ("test_sample.test_pass", 1, True),
        ("test_sample.test_fail", 1, False),
        ("test_sample.test_error", 1, False),
        ("test_sample.TestGroup.test_in_class", 1, True),
    ]
    checks = {c.name: c for c in report.checks}
    fail = checks["test_sample.test_fail"]
    assert fail.message is not None and fail.message.startswith("AssertionError: math is off")
    assert fail.evidence is not None and "assert 1 + 1 == 3" in fail.evidence
    error = checks["test_sample.test_error"]
    assert error.message == 'error: failed on setup with "RuntimeError: fixture exploded"'
    assert report.skipped == ["test_sample.test_skip (no database)"]
    assert report.skipped_note() == "skipped in JUnit: test_sample.test_skip (no database)"


def test_nested_suites_names_counts_and_outcomes() -> None:
    report = parse_junit(ASSETS / "nested_suites.xml")

    assert report.problem is None
    path = "outer > inner > "
    assert [(c.name, c.assertions, c.passed) for c in report.checks] == [
        (path + "pkg.Cls.counts", 7, True),  # twice in the file: one check, the larger count
        (path + "no classname", 1, True),
        (path + "empty classname", 0, True),  # zero is kept: the runner's rule fails it ("asserted nothing")
        (path + "pkg.Cls.fails without message", 1, False),
        (path + "pkg.Cls.crashes", 1, False),
        (path + "pkg.Cls.testcase 8", 1, True),
    ]
    checks = {c.name: c for c in report.checks}
    assert checks[path + "pkg.Cls.fails without message"].message == "expected 1"
    assert checks[path + "pkg.Cls.fails without message"].evidence == "expected 1\nbut got 2"
    assert checks[path + "pkg.Cls.crashes"].message == "error: NullPointerException"
    assert checks[path + "pkg.Cls.crashes"].evidence == "at Cls.java:12"
    assert report.skipped == [path + "pkg.Cls.later (not on linux)"]


def test_single_testsuite_root() -> None:
    report = parse_junit(ASSETS / "single_suite_root.xml")

    assert [(c.name, c.assertions) for c in report.checks] == [
        ("go > example.com/pkg.TestOne", 1),
        ("go > example.com/pkg.TestTwo", 3),  # assertions="3.0": a whole number written as a float
    ]


def test_no_testcases_is_a_problem() -> None:
    report = parse_junit(ASSETS / "no_testcases.xml")

    assert report.checks == []
    assert report.problem == "no <testcase> in the report"


def test_all_skipped_is_not_a_problem_but_listed() -> None:
    report = parse_junit(ASSETS / "all_skipped.xml")

    assert report.checks == [] and report.problem is None
    assert report.skipped == ["s > a", "s > b (no gpu)"]


def test_long_failure_text_is_cut(tmp_path: Path) -> None:
    big = "E" * 50_000
    path = tmp_path / "big.xml"
    path.write_text(
        f'<testsuite name="s"><testcase name="x"><failure message="m">{big}</failure></testcase></testsuite>'
    )

    check = parse_junit(path).checks[0]

    assert check.evidence is not None
    assert EVIDENCE_LIMIT <= len(check.evidence.encode()) < EVIDENCE_LIMIT + 100
    assert check.evidence.endswith("more bytes cut)")


ERRORS = {
    "invalid": r"^junit report invalid\.xml: not valid XML: line 4: mismatched tag; fix the scorer that writes it$",
    "entity_expansion": r"^junit report entity_expansion\.xml: line 2: DOCTYPE declarations are refused",
    "external_entity": r"^junit report external_entity\.xml: line 2: DOCTYPE declarations are refused",
    "wrong_root": r"^junit report wrong_root\.xml: the root element is <html>, not <testsuites> or <testsuite>",
    "bad_assertions": r"^junit report bad_assertions\.xml: line 4: testcase 's > c\.x': assertions='many' is not a whole",
    "empty": r"^junit report empty\.xml: not valid XML: line 1: no element found",
    "two_roots": r"^junit report two_roots\.xml: not valid XML: line 2: junk after document element",
}


def test_every_error_asset_has_a_case() -> None:
    valid = {"nested_suites", "single_suite_root", "no_testcases", "all_skipped"}
    assert sorted(p.stem for p in ASSETS.glob("*.xml")) == sorted(valid | set(ERRORS))


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_unusable_junit_raises_one_line_report_error(case: str) -> None:
    with pytest.raises(ReportError, match=ERRORS[case]) as info:
        parse_junit(ASSETS / f"{case}.xml")
    assert "\n" not in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"^junit report results\.xml: no such file; the scorer did not write it"):
        parse_junit(tmp_path / "results.xml")


def test_label_names_the_file_in_messages(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"^junit report out/results\.xml: is a directory"):
        parse_junit(tmp_path, label="out/results.xml")


# --- real runners: identity, teardown, expected failures ----------------------


def _node_junit(tmp_path: Path, out: str, env: dict[str, str] | None = None) -> Path:
    shutil.copy(PRODUCERS / "node_describe.test.mjs", tmp_path / "d.test.mjs")
    proc = subprocess.run(
        ["node", "--test", "--test-reporter=junit", f"--test-reporter-destination={out}", "d.test.mjs"],
        cwd=tmp_path, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a TODO that fails does not fail node's run
    return tmp_path / out


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_real_node_junit_names_come_from_the_describe_path(tmp_path: Path) -> None:
    report = parse_junit(_node_junit(tmp_path, "all.xml"))

    assert report.problem is None
    assert [(c.name, c.passed, c.message) for c in report.checks] == [
        ("add > works", True, None),
        ("add > carries", True, None),
        ("sub > works", True, None),  # node's classname is "test" for all: the describe path tells them apart
        ("sub > negative > works", True, None),
        ("future feature", True, "TODO not written yet: fails as expected"),  # as a TAP "# TODO" reads
    ]
    # node writes a todo that did not fail the same whether its body passed or it has none (it.todo):
    # not a check, never counted as a pass.
    assert report.skipped == [
        "done feature (TODO remove me; did not fail)",
        "needs a database (no database)",
        "not started (TODO; did not fail)",
    ]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_removing_one_node_test_renames_no_other(tmp_path: Path) -> None:
    before = {c.name for c in parse_junit(_node_junit(tmp_path, "before.xml")).checks}
    after = {c.name for c in parse_junit(_node_junit(tmp_path, "after.xml", {"DROP_ADD": "1"})).checks}

    assert before - after == {"add > works"}
    assert after <= before


def test_real_pytest_teardown_error_merges_and_expected_failures(tmp_path: Path) -> None:
    shutil.copy(PRODUCERS / "pytest_outcomes.py", tmp_path / "test_outcomes.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | NO_PLUGINS
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
         "--junitxml", str(tmp_path / "results.xml"), "test_outcomes.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    xml = (tmp_path / "results.xml").read_text()
    assert xml.count('name="test_fails_then_teardown_errors"') == 2  # pytest really writes two testcases

    report = parse_junit(tmp_path / "results.xml")

    m = "test_outcomes."
    assert [(c.name, c.assertions, c.passed) for c in report.checks] == [
        (m + "test_fails_then_teardown_errors", 1, False),  # one check, no phantom "#2"
        (m + "test_passes_then_teardown_errors", 1, False),
        (m + "test_expected_failure", 1, True),
        (m + "test_unexpected_pass", 1, True),  # pytest writes a non-strict XPASS as a plain pass
        (m + "test_unexpected_pass_strict", 1, False),  # strict: pytest writes a failure
    ]
    checks = {c.name: c for c in report.checks}
    both = checks[m + "test_fails_then_teardown_errors"]
    assert both.message is not None and both.message.startswith("AssertionError: one is not two")
    assert 'error: failed on teardown with "RuntimeError: teardown broke"' in both.message
    assert both.evidence is not None and "teardown broke" in both.evidence and "assert 1 == 2" in both.evidence
    assert checks[m + "test_expected_failure"].message == "xfail bug 12: fails as expected"
    assert checks[m + "test_unexpected_pass_strict"].message == "[XPASS(strict)] bug 14"
    assert report.skipped == []


@pytest.mark.parametrize(
    ("attribute", "expected"),
    [("3", 3), ("3.0", 3), (" 7 ", 7), ("0", 0), ("1000000000", 1_000_000_000), ("", 1)],
)
def test_assertions_attribute_whole_numbers(tmp_path: Path, attribute: str, expected: int) -> None:
    path = tmp_path / "r.xml"
    path.write_text(f'<testsuite name="s"><testcase classname="c" name="x" assertions="{attribute}"/></testsuite>')

    assert parse_junit(path).checks[0].assertions == expected


@pytest.mark.parametrize("attribute", ["3.5", "-1", "1e3", "1000000001", "9" * 5000, "0x10", "3."])
def test_assertions_attribute_that_is_no_whole_number_is_refused_not_rounded(tmp_path: Path, attribute: str) -> None:
    path = tmp_path / "r.xml"
    path.write_text(f'<testsuite name="s"><testcase classname="c" name="x" assertions="{attribute}"/></testsuite>')

    with pytest.raises(ReportError, match=r"^junit report r\.xml: line 1: testcase 's > c\.x': assertions=") as info:
        parse_junit(path)
    assert "is not a whole number from 0 to 1,000,000,000; fix the scorer that writes it" in str(info.value)
    assert len(str(info.value)) < 300 and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("xml", "name"),
    [
        ('<testsuite name="com.x.FooTest"><testcase classname="com.x.FooTest" name="testBar"/></testsuite>',
         "com.x.FooTest.testBar"),  # Maven: the suite is the class
        ('<testsuites><testsuite name="Unit"><testsuite name="Tests\\FooTest">'
         '<testcase classname="Tests.FooTest" name="testBar"/></testsuite></testsuite></testsuites>',
         "Unit > Tests.FooTest.testBar"),  # PHPUnit: backslashes read as dots
        ('<testsuites><testsuite name="pytest"><testcase classname="test_x" name="test_a"/></testsuite></testsuites>',
         "test_x.test_a"),  # pytest's run-level suite names no group
        ('<testsuites><testsuite name="a"><testsuite name=""><testcase classname="test" name="w"/></testsuite>'
         '</testsuite></testsuites>', "a > w"),
    ],
)
def test_check_names_by_producer(tmp_path: Path, xml: str, name: str) -> None:
    path = tmp_path / "r.xml"
    path.write_text(xml)

    assert [c.name for c in parse_junit(path).checks] == [name]


# --- one check per place: the same name from two files is two checks, or refused ---------------

def _parse_text(tmp_path: Path, xml: str):
    path = tmp_path / "r.xml"
    path.write_text(xml)
    return parse_junit(path)


def test_same_name_in_two_files_is_two_checks_named_by_file(tmp_path: Path) -> None:
    """jest-junit with addFileAttribute: two files with describe('math') it('adds')."""
    report = _parse_text(
        tmp_path,
        '<testsuites name="jest tests">'
        '<testsuite name="math" tests="2" failures="0" skipped="0">'
        '<testcase classname="math adds" name="math adds" file="tests/a.test.js"/>'
        '<testcase classname="math only a" name="math only a" file="tests/a.test.js"/></testsuite>'
        '<testsuite name="math" tests="1" failures="1" skipped="0">'
        '<testcase classname="math adds" name="math adds" file="tests/b.test.js"><failure>boom</failure></testcase>'
        '</testsuite></testsuites>',
    )

    assert [(c.name, c.passed) for c in report.checks] == [
        ("tests/a.test.js > math > math adds.math adds", True),  # only the names that collide get the file
        ("tests/b.test.js > math > math adds.math adds", False),
        ("math > math only a.math only a", True),
    ]


def test_same_name_in_two_suites_without_files_is_refused_naming_both_lines(tmp_path: Path) -> None:
    """node's reporter (and jest-junit by default) name suites after the describe and write no file."""
    xml = (
        "<testsuites>\n"
        '<testsuite name="math"><testcase name="adds" classname="test"/></testsuite>\n'
        '<testsuite name="math"><testcase name="adds" classname="test"/></testsuite>\n'
        "</testsuites>"
    )
    with pytest.raises(ReportError) as info:
        _parse_text(tmp_path, xml)

    message = str(info.value)
    assert message.startswith(
        "junit report r.xml: testcase 'math > adds' at line 2 and line 3: the same name in places the report "
        "does not tell apart by file, which evalrun will not merge into one check; "
    ), message
    assert "docs/recipes-junit.md" in message and "\n" not in message


def test_same_name_outside_any_suite_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"testcase 'top' at line 1 and line 1: the same name"):
        _parse_text(tmp_path, '<testsuites><testcase name="top"/><testcase name="top"/></testsuites>')


def test_same_name_in_one_suite_is_still_one_check(tmp_path: Path) -> None:
    """pytest's teardown twin: the second <testcase> of a test is in the same suite, the same file."""
    report = _parse_text(
        tmp_path,
        '<testsuites><testsuite name="pytest"><testcase classname="t" name="x" file="t.py"><failure message="f"/>'
        '</testcase><testcase classname="t" name="y" file="t.py"/>'
        '<testcase classname="t" name="x" file="t.py"><error message="teardown"/></testcase></testsuite></testsuites>',
    )

    assert [(c.name, c.passed, c.message) for c in report.checks] == [
        ("t.x", False, "f; error: teardown"), ("t.y", True, None)
    ]


def test_jest_junit_todo_property_makes_a_todo_not_a_pass(tmp_path: Path) -> None:
    report = _parse_text(
        tmp_path,
        '<testsuites name="jest tests"><testsuite name="math" tests="1" failures="0" skipped="0">'
        '<testcase classname="math adds" name="math adds"><properties><property name="status" value="passed"/>'
        '</properties></testcase>'
        '<testcase classname="math later" name="math later"><properties><property name="status" value="todo"/>'
        '</properties></testcase></testsuite></testsuites>',
    )

    assert [c.name for c in report.checks] == ["math > math adds.math adds"]
    assert report.skipped == ["math > math later.math later (todo)"]
    assert report.notes == []


def test_jest_junit_todo_without_the_property_is_said_in_a_note(tmp_path: Path) -> None:
    """jest-junit leaves a todo out of the suite's tests count but writes it like a pass."""
    report = _parse_text(
        tmp_path,
        '<testsuites name="jest tests"><testsuite name="math" tests="2" failures="0" skipped="1">\n'
        '<testcase classname="math adds" name="math adds"/><testcase classname="math later" name="math later"/>'
        '<testcase classname="math s" name="math s"><skipped/></testcase></testsuite></testsuites>',
    )

    assert len(report.checks) == 2
    assert report.notes == [
        'suite "math" at line 1 lists 3 testcases but counts 2 tests: 1 is a todo written as passing, '
        "counted as passes here; jest-junit marks them with a testcase property status (see docs/recipes-junit.md)"
    ]


def test_suite_counts_that_match_give_no_note(tmp_path: Path) -> None:
    report = _parse_text(
        tmp_path,
        '<testsuite name="s" tests="2" failures="1" errors="0" skipped="0"><testcase name="a"/>'
        '<testcase name="b"><failure/></testcase></testsuite>',
    )
    assert report.notes == []


def test_a_file_prefix_that_meets_another_name_is_refused_not_merged(tmp_path: Path) -> None:
    xml = (
        '<testsuites><testsuite name="a.js"><testcase name="x"/></testsuite>'
        '<testsuite name="s"><testcase name="x" file="a.js"/></testsuite>'
        '<testsuite name="s"><testcase name="x" file="b.js"/></testsuite></testsuites>'
    )
    # "s > x" from a.js would become "a.js > s > x"; here the names are "a.js > x" and "s > x": no clash, two checks each
    report = _parse_text(tmp_path, xml)
    assert sorted(c.name for c in report.checks) == ["a.js > s > x", "a.js > x", "b.js > s > x"]

    clash = (
        '<testsuites><testsuite name="a.js"><testsuite name="s"><testcase name="x"/></testsuite></testsuite>'
        '<testsuite name="s"><testcase name="x" file="a.js"/></testsuite>'
        '<testsuite name="s"><testcase name="x" file="b.js"/></testsuite></testsuites>'
    )
    with pytest.raises(ReportError, match=r"testcase 's > x' at line 1 and line 1: the same name"):
        _parse_text(tmp_path, clash)


def test_a_refused_name_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text('<testsuites><testcase name="key sk-live-123456"/><testcase name="key sk-live-123456"/></testsuites>')
    with pytest.raises(ReportError) as info:
        parse_junit(path, secrets=["sk-live-123456"])
    assert "sk-live-123456" not in str(info.value)
