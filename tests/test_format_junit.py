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


def test_real_pytest_junitxml(tmp_path: Path) -> None:
    shutil.copy(PRODUCERS / "pytest_sample.py", tmp_path / "test_sample.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
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
    assert [(c.name, c.assertions, c.passed) for c in report.checks] == [
        ("pkg.Cls.counts", 7, True),
        ("no classname", 1, True),
        ("empty classname", 0, True),  # zero is kept: the runner's rule fails it ("asserted nothing")
        ("pkg.Cls.fails without message", 1, False),
        ("pkg.Cls.crashes", 1, False),
        ("pkg.Cls.counts #2", 1, True),
        ("pkg.Cls.testcase 8", 1, True),
    ]
    checks = {c.name: c for c in report.checks}
    assert checks["pkg.Cls.fails without message"].message == "expected 1"
    assert checks["pkg.Cls.fails without message"].evidence == "expected 1\nbut got 2"
    assert checks["pkg.Cls.crashes"].message == "error: NullPointerException"
    assert checks["pkg.Cls.crashes"].evidence == "at Cls.java:12"
    assert report.skipped == ["pkg.Cls.later (not on linux)"]


def test_single_testsuite_root() -> None:
    report = parse_junit(ASSETS / "single_suite_root.xml")

    assert [(c.name, c.assertions) for c in report.checks] == [
        ("example.com/pkg.TestOne", 1),
        ("example.com/pkg.TestTwo", 3),
    ]


def test_no_testcases_is_a_problem() -> None:
    report = parse_junit(ASSETS / "no_testcases.xml")

    assert report.checks == []
    assert report.problem == "no <testcase> in the report"


def test_all_skipped_is_not_a_problem_but_listed() -> None:
    report = parse_junit(ASSETS / "all_skipped.xml")

    assert report.checks == [] and report.problem is None
    assert report.skipped == ["a", "b (no gpu)"]


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
    "bad_assertions": r"^junit report bad_assertions\.xml: line 4: testcase 'c\.x': assertions='many' is not a whole",
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
