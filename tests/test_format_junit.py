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

ASSETS = Path(__file__).parent / "assets" / "junit"
PRODUCERS = Path(__file__).parent / "producers"
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
        ("done feature", True, "TODO remove me: passes now; remove the TODO"),
    ]
    assert report.skipped == ["needs a database (no database)"]


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
