"""The assertion counts evalrun's vitest/jest setup files write, and the JUnit reader that fills counts from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.errors import ReportError
from evalrun.reports_in.assertion_counts import (
    AssertionCounts,
    parse_assertion_counts,
    read_assertion_counts,
)
from evalrun.reports_in.junit import parse_junit


def _line(**over: object) -> bytes:
    record = {"v": 1, "runner": "vitest", "file": "/p/web/tests/a.test.ts", "titles": ["math", "adds"], "assertions": 2}
    record.update(over)
    return json.dumps(record).encode() + b"\n"


def test_a_count_is_found_by_its_titles_and_the_file_the_junit_names_relative() -> None:
    counts = parse_assertion_counts(_line() + _line(titles=["top"], assertions=0) + _line(file="/p/web/b.test.ts"), "w.jsonl")
    assert counts.lookup(["math > adds"], ["tests/a.test.ts"]) == 2
    assert counts.lookup(["math > adds"], ["./tests/a.test.ts"]) == 2
    assert counts.lookup(["top"], ["web/tests/a.test.ts"]) == 0
    assert counts.lookup(["math > adds"], ["s/a.test.ts"]) is None  # only at a "/": never part of a name
    assert counts.lookup(["math"], ["tests/a.test.ts"]) is None
    assert counts.lookup(["math > adds"], ["", "b.test.ts"]) == 2
    assert counts.runners == {"vitest"}


def test_a_test_recorded_twice_counts_its_most() -> None:
    counts = parse_assertion_counts(_line(assertions=1) + _line(assertions=3), "w.jsonl")
    assert counts.lookup(["math > adds"], ["tests/a.test.ts"]) == 3


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"{not json\n", "line 1: not JSON"),
        (_line() + b"[1, 2]\n", "line 2: not a JSON object"),
        (_line(v=2), "line 1: version 2, not 1"),
        (_line(runner="mocha"), "runner 'mocha' is not one of vitest, jest"),
        (_line(file=""), "file must be the test file's path"),
        (_line(file=7), "file must be the test file's path"),
        (_line(titles=[]), "titles must be a list"),
        (_line(titles="math > adds"), "titles must be a list"),
        (_line(titles=["a", 1]), "titles must be a list"),
        (_line(assertions=-1), "assertions must be a whole number"),
        (_line(assertions=2.5), "assertions must be a whole number"),
        (_line(assertions=True), "assertions must be a whole number"),
        (_line(assertions=10**12), "assertions must be a whole number"),
    ],
)
def test_a_line_that_is_not_the_format_is_one_line_naming_the_file_the_line_and_the_fix(raw: bytes, says: str) -> None:
    with pytest.raises(ReportError) as exc:
        parse_assertion_counts(raw, "$EVALRUN_WORKDIR/assertion-counts/vitest-1-0.jsonl")
    message = str(exc.value)
    assert says in message and "\n" not in message, message
    assert message.startswith("assertion counts $EVALRUN_WORKDIR/assertion-counts/vitest-1-0.jsonl: line ")
    assert message.endswith("(evalrun setup-file vitest|jest, see docs/recipes-junit.md)")


def test_the_folder_is_read_bounded_and_none_when_no_setup_file_wrote(tmp_path: Path) -> None:
    assert read_assertion_counts(tmp_path / "absent", "counts") is None
    folder = tmp_path / "counts"
    folder.mkdir()
    (folder / "vitest-1-0.jsonl").write_bytes(_line())
    (folder / "vitest-1-1.jsonl").write_bytes(_line(titles=["top"], assertions=5))
    counts = read_assertion_counts(folder, "counts")
    assert counts is not None and counts.lines == 2 and counts.lookup(["top"], ["tests/a.test.ts"]) == 5
    os.mkfifo(folder / "pipe")  # would block a plain open forever
    with pytest.raises(ReportError, match=r"^assertion counts counts/pipe: is a FIFO \(named pipe\), not a regular file; copy"):
        read_assertion_counts(folder, "counts")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportError, match="is not a folder"):
        read_assertion_counts(tmp_path / "file", "counts")


VITEST_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<testsuites name="vitest tests" tests="3">
  <testsuite name="tests/a.test.ts" tests="4" failures="0" errors="0" skipped="1">
    <testcase classname="tests/a.test.ts" name="math &gt; adds"/>
    <testcase classname="tests/a.test.ts" name="math &gt; in &gt; x" assertions="7"/>
    <testcase classname="tests/a.test.ts" name="top"/>
    <testcase classname="tests/a.test.ts" name="later"><skipped/></testcase>
  </testsuite>
</testsuites>
"""
JEST_XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="2">
  <testsuite name="tests/a.test.js" tests="2" failures="0" errors="0" skipped="0">
    <testcase classname="math &gt; in" name="x" file="tests/a.test.js"/>
    <testcase classname="" name="top" file="tests/a.test.js"/>
  </testsuite>
</testsuites>
"""


def test_junit_takes_each_testcase_count_from_the_setup_file_and_says_which_have_none(tmp_path: Path) -> None:
    report = tmp_path / "out.xml"
    report.write_text(VITEST_XML)
    counts = parse_assertion_counts(_line(file=str(tmp_path / "tests/a.test.ts")) + _line(
        file=str(tmp_path / "tests/a.test.ts"), titles=["math", "in", "x"], assertions=1), "w")
    parsed = parse_junit(report, counts=counts)
    got = {c.name: c.assertions for c in parsed.checks}
    # the report's own attribute wins; a testcase without a count is 1, and said once
    assert got == {"tests/a.test.ts.math > adds": 2, "tests/a.test.ts.math > in > x": 7, "tests/a.test.ts.top": 1}
    assert len(parsed.notes) == 1 and parsed.notes[0].startswith(
        "1 testcase (first: 'tests/a.test.ts.top', line 6) has no assertion count from evalrun's vitest setup file"), parsed.notes
    assert {c.name: c.assertions for c in parse_junit(report).checks}["tests/a.test.ts.math > adds"] == 1  # no setup file

    report.write_text(JEST_XML)
    counts = parse_assertion_counts(
        _line(runner="jest", file="/ci/app/tests/a.test.js", titles=["math", "in", "x"], assertions=3)
        + _line(runner="jest", file="/ci/app/tests/a.test.js", titles=["top"], assertions=0), "w")
    parsed = parse_junit(report, counts=counts)
    assert {c.name: c.assertions for c in parsed.checks} == {"tests/a.test.js > math > in.x": 3, "tests/a.test.js > top": 0}
    assert parsed.notes == []


RECORD = st.fixed_dictionaries({
    "v": st.sampled_from([1, 1, 1, 2, "1", None]),
    "runner": st.sampled_from(["vitest", "jest", "mocha", 3]),
    "file": st.one_of(st.text(max_size=30), st.integers()),
    "titles": st.one_of(st.lists(st.text(max_size=10), max_size=4), st.text(max_size=5)),
    "assertions": st.one_of(st.integers(min_value=-2, max_value=5), st.floats(allow_nan=False), st.booleans()),
})


@given(raw=st.one_of(st.binary(max_size=300), st.lists(RECORD, max_size=6).map(
    lambda rs: b"\n".join(json.dumps(r).encode() for r in rs))))
@settings(max_examples=200, deadline=None)
def test_any_bytes_give_counts_or_one_line_error(raw: bytes) -> None:
    try:
        counts = parse_assertion_counts(raw, "w.jsonl")
    except ReportError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("assertion counts w.jsonl: line ")
        return
    assert isinstance(counts, AssertionCounts)
    for entries in counts.by_title.values():
        assert all(isinstance(n, int) and n >= 0 for _, n in entries)


@given(tests=st.lists(st.tuples(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3),
                                st.integers(min_value=0, max_value=50)), min_size=1, max_size=8))
@settings(max_examples=100, deadline=None)
def test_every_recorded_test_is_found_with_its_most(tests: list[tuple[list[str], int]]) -> None:
    raw = b"".join(_line(titles=titles, assertions=n) for titles, n in tests)
    counts = parse_assertion_counts(raw, "w.jsonl")
    for titles, _ in tests:
        joined = " > ".join(titles)
        expected = max(n for t, n in tests if " > ".join(t) == joined)
        assert counts.lookup([joined], ["tests/a.test.ts"]) == expected


def test_setup_file_prints_the_packaged_file_and_refuses_another_runner(capsys) -> None:
    from evalrun.cli import main

    for runner, start in (("vitest", "import { afterEach, expect } from 'vitest';"), ("jest", "const { appendFileSync")):
        assert main(["setup-file", runner]) == 0
        path = Path(capsys.readouterr().out.strip())
        assert path.is_file() and start in path.read_text(), path
    assert main(["setup-file", "mocha"]) == 2
    assert capsys.readouterr().err.strip() == "evalrun: error: no setup file for 'mocha'; use one of vitest, jest"
