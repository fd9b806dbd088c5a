"""TAP streams become checks: real producers (node:test, Perl's Test::More) and one asset per edge case."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evalrun.reports_in.parsed import ParsedReport
from evalrun.text import EVIDENCE_LIMIT
from evalrun.reports_in.tap import parse_tap

from harness import PRODUCERS, TESTS

ASSETS = TESTS / "assets" / "tap"


def _summary(report: ParsedReport) -> list[tuple[str, int, bool]]:
    return [(c.name, c.assertions, c.passed) for c in report.checks]


def _run_to_file(argv: list[str], out: Path, *, env: dict[str, str] | None = None, merge: bool = False) -> int:
    """Run a producer the way the runner does: its stdout saved to a file."""
    with out.open("wb") as handle:
        proc = subprocess.run(
            argv,
            stdout=handle,
            stderr=subprocess.STDOUT if merge else subprocess.DEVNULL,
            env=env,
            timeout=60,
            check=False,
        )
    return proc.returncode


# --- real producers -------------------------------------------------------


def test_node_test_runner_tap(tmp_path: Path) -> None:
    out = tmp_path / "stdout.tap"
    code = _run_to_file(["node", "--test", "--test-reporter=tap", str(PRODUCERS / "node_suite.test.mjs")], out)
    assert code == 1  # node says the suite failed; the checks below say which part

    report = parse_tap(out)

    assert report.problem is None
    assert _summary(report) == [
        ("math", 3, True),  # adds + nested(multiplies, divides): leaves, recursively
        ("fails", 1, False),
        ("future feature", 1, True),  # TODO: a failure that does not fail
        ("with subtests", 2, False),
    ]
    by_name = {c.name: c for c in report.checks}
    assert by_name["fails"].message is not None and "one is not two" in by_name["fails"].message
    assert "ERR_ASSERTION" in (by_name["fails"].evidence or "")
    assert by_name["with subtests"].message == "b: b broke"  # the failing leaf, not node's "1 subtest failed"
    assert by_name["future feature"].message == "TODO not written yet: fails as expected"
    assert report.skipped == ["needs a database (no database)"]
    assert report.skipped_note() == "skipped in TAP: needs a database (no database)"


def test_perl_test_more(tmp_path: Path) -> None:
    out = tmp_path / "stdout.tap"
    code = _run_to_file(["perl", str(PRODUCERS / "test_more.pl")], out)
    assert code == 1

    report = parse_tap(out)

    assert report.problem is None
    assert _summary(report) == [
        ("first passes", 1, True),
        ("math is off", 1, False),
        ("grouped", 2, True),
        ("future feature", 1, True),
        ("first passes #2", 1, True),  # repeated description made unique, deterministically
    ]
    assert report.skipped == ["test 4 (no network)"]  # Test::More's skip has no description


def test_perl_diag_merged_into_stdout_is_the_message(tmp_path: Path) -> None:
    out = tmp_path / "stdout.tap"
    _run_to_file(["perl", str(PRODUCERS / "test_more.pl")], out, merge=True)

    failed = {c.name: c for c in parse_tap(out).checks}["math is off"]

    assert failed.message == f"at {PRODUCERS / 'test_more.pl'} line 8.; got: '2'; expected: '3'; the adder is broken"
    assert "Failed test 'math is off'" in (failed.evidence or "")


def test_perl_diag_on_stderr_is_attached_to_the_failed_point_it_names(tmp_path: Path) -> None:
    """Test::More prints got/expected on stderr: the block naming a failed point becomes its message."""
    script = tmp_path / "t.pl"
    script.write_text(
        "use strict; use warnings; use Test::More tests => 4;\n"
        "is(1, 2, 'first');\n"
        "ok(1, 'fine');\n"
        "is('a', 'b', 'first');\n"  # the same name again: the second block goes to the second point
        "subtest 'group' => sub { plan tests => 1; is(3, 4, 'inner'); };\n"
    )
    out = tmp_path / "stdout.tap"
    with out.open("wb") as handle:
        proc = subprocess.run(["perl", str(script)], stdout=handle, stderr=subprocess.PIPE, timeout=60, check=False)
    stderr = proc.stderr.decode()
    assert "got: '1'" in stderr and "got: '1'" not in out.read_text()  # it really is on stderr

    checks = {c.name: c for c in parse_tap(out, stderr=stderr).checks}

    assert checks["first"].message == f"at {script} line 2.; got: '1'; expected: '2'"
    assert checks["first #2"].message == f"at {script} line 4.; got: 'a'; expected: 'b'"
    assert checks["group"].message == f"inner: at {script} line 5.; got: '3'; expected: '4'"
    assert "Failed test 'first'" in (checks["first"].evidence or "")
    # without stderr, nothing is invented
    assert {c.name: c for c in parse_tap(out).checks}["first"].message is None


def test_perl_bail_out_fails_the_eval(tmp_path: Path) -> None:
    out = tmp_path / "stdout.tap"
    code = _run_to_file(["perl", str(PRODUCERS / "test_more.pl")], out, env={"BAIL": "1", "PATH": "/usr/bin:/bin"})
    assert code != 0

    report = parse_tap(out)

    assert report.problem == "Bail out! db gone"
    assert [c.name for c in report.checks] == ["first passes", "math is off", "grouped"]


def test_prove_agrees_the_perl_script_fails() -> None:
    """prove, TAP's reference harness, reads the same stream as a failure: our reading is not lenient."""
    proc = subprocess.run(
        ["prove", str(PRODUCERS / "test_more.pl")], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode != 0
    assert "Failed 1/6" in proc.stdout


# --- one asset per edge case ------------------------------------------------

CASES: dict[str, dict[str, object]] = {
    "plan_short": {"checks": [("one", 1, True), ("two", 1, True)], "problem": "planned 3, ran 2"},
    "plan_at_end": {"checks": [("one", 1, True), ("two", 1, False)], "problem": None},
    "no_plan": {"checks": [("one", 1, True), ("two", 1, True)], "problem": "no plan (1..N line) after 2 test points"},
    "empty": {"checks": [], "problem": "no test points"},
    "garbage": {"checks": [], "problem": "no test points"},
    "bail_out": {"checks": [("connects", 1, True), ("migrates", 1, True)], "problem": "Bail out! db gone"},
    "skip_all": {"checks": [], "problem": None, "skip_all": "no database"},
    "todo": {"checks": [("parser", 1, True), ("lexer", 1, True)], "problem": None},
    "duplicates": {
        "checks": [("same", 1, True), ("same #2", 1, True), ("same #2 #2", 1, True), ("same #3", 1, True),
                   ("other", 1, True)],
        "problem": None,
    },
    "unnamed": {"checks": [("test 1", 1, True), ("test 2", 1, True), ("test 3", 1, False)], "problem": None},
    "yaml_message": {
        "checks": [("has message", 1, False), ("no message key", 1, False), ("passing block is dropped", 1, True)],
        "problem": None,
    },
    "escaped_hash": {
        "checks": [("issue # 12 is fixed", 1, True), ("has # a comment, not a directive", 1, True)],
        "problem": None,
    },
    "subtests_tap14": {"checks": [("outer", 3, True), ("second", 2, False)], "problem": None},
    "subtest_plan_short": {"checks": [("partial", 2, False)], "problem": None},
    "yaml_unterminated": {"checks": [("cut", 1, False)], "problem": "the stream ends inside the YAML block of 'cut'"},
    "out_of_sequence": {
        "checks": [("a", 1, True), ("c", 1, True), ("b", 1, True)],
        "problem": "test point numbered 3 where 2 was expected",
    },
    "crlf": {"checks": [("windows", 1, True), ("lines", 1, False)], "problem": None},
    "invalid_utf8": {"checks": [("caf\ufffd latin-1", 1, True), ("\ufffd\ufffd bytes", 1, True)], "problem": None},
    "skip_variants": {"checks": [("z", 1, True)], "problem": None,
                      "skipped": ["test 1", "x (reason one)", "y (reason two)"]},
    "all_subtests_skipped": {"checks": [("cpu", 1, True)], "problem": None,
                             "skipped": ["gpu suite (all its subtests were skipped)"]},
    "two_plans": {"checks": [("a", 1, True), ("b", 1, True)], "problem": "2 plans (1..N lines) in one stream"},
}


def test_every_asset_has_a_case() -> None:
    assert sorted(p.stem for p in ASSETS.glob("*.tap")) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tap_asset(case: str) -> None:
    expected = CASES[case]

    report = parse_tap(ASSETS / f"{case}.tap")

    assert _summary(report) == expected["checks"]
    if expected["problem"] is None:
        assert report.problem is None
    else:
        assert report.problem is not None and report.problem.startswith(str(expected["problem"]))
    assert report.skip_all == expected.get("skip_all")
    if "skipped" in expected:
        assert report.skipped == expected["skipped"]


def test_yaml_message_field_and_block_fallback() -> None:
    checks = {c.name: c for c in parse_tap(ASSETS / "yaml_message.tap").checks}

    assert checks["has message"].message == "expected 3 got 2"
    assert checks["has message"].evidence is not None and "severity: fail" in checks["has message"].evidence
    assert checks["no message key"].message == "got: 2 expected: 3"
    assert checks["passing block is dropped"].message is None
    assert checks["passing block is dropped"].evidence is None


def test_todo_messages_say_whether_it_still_fails() -> None:
    checks = {c.name: c for c in parse_tap(ASSETS / "todo.tap").checks}

    assert checks["parser"].message == "TODO later: fails as expected"
    assert checks["lexer"].message == "TODO done now: passes now; remove the TODO"


def test_failing_leaf_names_its_path_in_the_parent_message() -> None:
    checks = {c.name: c for c in parse_tap(ASSETS / "subtests_tap14.tap").checks}

    assert checks["second"].message == "broken: wanted 1, got 2"
    partial = parse_tap(ASSETS / "subtest_plan_short.tap").checks[0]
    assert partial.message == "subtest 'partial' planned 3, ran 2"


def test_a_parent_that_says_ok_over_a_failed_subtest_fails(tmp_path: Path) -> None:
    """Real producers print the parent ``not ok`` then; a hand-written or buggy one may print ``ok``:
    the failed subtest fails its parent all the same, named in its message. A TODO subtest does not."""
    stream = tmp_path / "ok_over_failure.tap"
    stream.write_text(
        "1..3\n"
        "# Subtest: liar\n"
        "    1..2\n"
        "    ok 1 - fine\n"
        "    not ok 2 - broken\n"
        "      ---\n"
        "      message: wanted 1, got 2\n"
        "      ...\n"
        "ok 1 - liar\n"
        "# Subtest: deep liar\n"
        "    1..1\n"
        "    # Subtest: mid\n"
        "        1..1\n"
        "        not ok 1 - leaf\n"
        "    ok 1 - mid\n"
        "ok 2 - deep liar\n"
        "# Subtest: todo only\n"
        "    1..2\n"
        "    ok 1 - fine\n"
        "    not ok 2 - later # TODO not written\n"
        "ok 3 - todo only\n"
    )

    report = parse_tap(stream)

    assert report.problem is None
    assert [(c.name, c.assertions, c.passed, c.message, c.evidence) for c in report.checks] == [
        ("liar", 2, False, "broken: wanted 1, got 2", "failed: broken: wanted 1, got 2"),
        ("deep liar", 1, False, "mid > leaf", "failed: mid > leaf"),
        ("todo only", 2, True, None, None),
    ]


def test_skip_all_note() -> None:
    report = parse_tap(ASSETS / "skip_all.tap")

    assert report.skipped_note() == "everything skipped in TAP: no database"


def test_missing_output_file_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    report = parse_tap(tmp_path / "never-written.tap")

    assert report.checks == []
    assert report.problem is not None and "no TAP output to read" in report.problem


def test_huge_yaml_block_is_cut_to_the_evidence_limit(tmp_path: Path) -> None:
    stream = tmp_path / "big.tap"
    with stream.open("w") as handle:
        handle.write("1..1\nnot ok 1 - flood\n  ---\n  message: flooded\n")
        for i in range(200_000):
            handle.write(f"  line{i}: {'x' * 40}\n")
        handle.write("  ...\n")

    check = parse_tap(stream).checks[0]

    assert check.message == "flooded"
    assert check.evidence is not None and len(check.evidence.encode()) < EVIDENCE_LIMIT + 100


def test_big_stream_is_streamed(tmp_path: Path) -> None:
    """100k points with node-style YAML blocks parse line by line to the end (the runner saves
    whole stdout). How fast is a benchmark's question, not a test's: no stopwatch here."""
    stream = tmp_path / "many.tap"
    with stream.open("w") as handle:
        handle.write("TAP version 13\n")
        for i in range(1, 100_001):
            handle.write(f"ok {i} - case {i}\n  ---\n  duration_ms: 0.1\n  ...\n")
        handle.write("1..100000\n")

    report = parse_tap(stream)

    assert report.problem is None
    assert len(report.checks) == 100_000
    assert report.checks[-1].name == "case 100000"
