"""The TAP reader pinned exactly: every check, message, evidence, skip and problem of small streams, the
line, digit, point and diagnostic limits at and one past their edges, and lines cut across read chunks."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun import files
from evalrun.reports_in import tap
from evalrun.reports_in.tap import LINE_LIMIT, parse_tap
from evalrun.text import EVIDENCE_LIMIT

SECRET = "sk-SECRETSECRET99"
R = "[redacted by evalrun]"


def _read(tmp_path: Path, text: str | bytes, stderr: str = "", secrets: tuple[str, ...] = ()):
    path = tmp_path / "out.tap"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    report = parse_tap(path, stderr, secrets)
    assert report.source == "TAP" and report.metrics == {}
    checks = [(c.name, c.assertions, c.passed, c.message, c.evidence) for c in report.checks]
    return checks, report.problem, report.skipped, report.skip_all


def _ok(*names: str) -> list[tuple]:
    return [(n, 1, True, None, None) for n in names]


CASES = {
    "1..2\nok 1 - a\nnot ok 2 - b\n": ([*_ok("a"), ("b", 1, False, None, None)], None, [], None),
    "1..3\nok 1 - a\n": (_ok("a"), "planned 3, ran 1", [], None),
    "1..0\n": ([], None, [], "the plan is 1..0"),
    "1..0 # SKIP no db\n": ([], None, [], "no db"),
    "1..0 # not a skip\n": ([], None, [], "the plan is 1..0"),
    "1..0 # skip\n": ([], None, [], "the plan is 1..0"),
    "1..0 # todo x\n": ([], None, [], "the plan is 1..0"),
    "1..0 # SKIP x\nok 1\n": (_ok("test 1"), "planned 0, ran 1", [], None),
    "1..0\nBail out!\n": ([], "Bail out!", [], None),
    "": ([], "no test points", [], None),
    "TAP version 14\npragma +strict\nstray\n1..1\nok 1 - a\n": (_ok("a"), None, [], None),
    "1..2\nok 1 - a\nok 000000000000000002 - b\n": (_ok("a", "b"), None, [], None),
    "1.." + "9" * 19 + "\nok 1\n": (_ok("test 1"), "the plan's count has more than 18 digits; ran 1", [], None),
    "1..1\nok " + "1" * 19 + " - a\n": (_ok("a"), "test point numbered 1111111111111111111 where 1 was expected", [],
                                       None),
    "1..1\nok " + "1" * 30 + "\n": (_ok("test 1"), "test point numbered 11111111111111111111111… where 1 was expected",
                                   [], None),
    "1..1\nnot ok 1 - a\n# got: 1\n# expected: 2\n": ([("a", 1, False, "got: 1; expected: 2", "# got: 1\n# expected: 2")],
                                                     None, [], None),
    "1..1\nok 1 - a\n# a comment\n": (_ok("a"), None, [], None),
    "# before\n1..1\nnot ok 1 - a\n": ([("a", 1, False, None, None)], None, [], None),
    "1..1\nnot ok 1 - a\n  ---\n  message: boom\n  at: x\n  ...\n": (
        [("a", 1, False, "boom", "message: boom\nat: x")], None, [], None),
    "1..1\nnot ok 1 - a\n  ---\n  error: bad\n  ...\n": ([("a", 1, False, "bad", "error: bad")], None, [], None),
    "1..1\nnot ok 1 - a\n  ---\n  message: ''\n  error: e\n  ...\n": (
        [("a", 1, False, "e", "message: ''\nerror: e")], None, [], None),
    "1..1\nnot ok 1 - a\n  ---\n  foo: bar\n\n    deeper\n  ...\n# after\n": (
        [("a", 1, False, "foo: bar deeper", "foo: bar\n\n  deeper")], None, [], None),
    "1..1\nnot ok 1 - a\n   ---\n  message: x\n": ([("a", 1, False, None, None)], None, [], None),
    "1..1\nnot ok 1 - a\n ---\n": ([("a", 1, False, None, None)], None, [], None),
    "1..2\nnot ok 1 - a\n  ---\n  message: m\nok 2 - b\n": (
        [("a", 1, False, "m", "message: m"), *_ok("b")], None, [], None),
    "1..2\nnot ok 1 - a\n  ---\n  message: m\n   ...\n  ...\nok 2 - b\n": (
        [("a", 1, False, "m ...", "message: m\n ..."), *_ok("b")], None, [], None),
    "1..1\nok 1 - a\n  ---\n  message: m\n  ...\n# c\n": (_ok("a"), None, [], None),
    "1..1\n  ---\n  message: m\n  ...\nok 1 - a\n": (_ok("a"), None, [], None),
    "1..1\nnot ok 1 - a # TODO later\n": ([("a", 1, True, "TODO later: fails as expected", None)], None, [], None),
    "1..1\nok 1 - a # todo later\n": ([("a", 1, True, "TODO later: passes now; remove the TODO", None)], None, [],
                                       None),
    "1..2\nok 1 - a # SKIP no net\nok 2 - b\n": (_ok("b"), None, ["a (no net)"], None),
    "1..1\nnot ok 1 - a # skipped: later\n": ([], None, ["a (later)"], None),
    "1..1\nok 1 - a # SKIP\n": ([], None, ["a"], None),
    "1..1\nok 1 - a \\# b \\\\ c \\x\n": (_ok("a # b \\ c \\x"), None, [], None),
    "1..1\nok 1 - a \\\n": (_ok("a \\"), None, [], None),
    "1..1\nok 1 - a # plain # SKIP why\n": ([], None, ["a # plain (why)"], None),
    "1..1\nok 1 - a \\# SKIP not one\n": (_ok("a # SKIP not one"), None, [], None),
    "1..1\nok 1 - a # plain\n": (_ok("a # plain"), None, [], None),
    "1..1\nok 1 -\n": (_ok("test 1"), None, [], None),
    "1..1\nok 1 -- a\n": (_ok("-- a"), None, [], None),
    "1..1\nokay\n": ([], "planned 1, ran 0", [], None),
    "1..1\n    1..2\n    ok 1 - x\n    not ok 2 - y\nnot ok 1 - outer\n": (
        [("outer", 2, False, "y", "failed: y")], None, [], None),
    "1..1\n    1..2\n    not ok 1 - x\n    not ok 2 - y\nnot ok 1 - outer\n": (
        [("outer", 2, False, "x (and 1 more)", "failed: x\nfailed: y")], None, [], None),
    "1..1\n    1..1\n    not ok 1 - x\n    # got: 3\nnot ok 1 - outer\n": (
        [("outer", 1, False, "x: got: 3", "failed: x: got: 3")], None, [], None),
    "# Subtest: outer\n    1..2\n    ok 1 - x\n    ok 2 - y\nok 1 - outer\n1..1\n": (_ok("outer")[:0] + [
        ("outer", 2, True, None, None)], None, [], None),
    "1..1\n    1..3\n    ok 1 - x\nok 1 - outer\n": ([("outer", 1, False, "subtest planned 3, ran 1", None)], None, [],
                                                    None),
    "1..1\n    # Subtest: inner\n    1..3\n    ok 1 - x\nok 1 - outer\n": (
        [("outer", 1, False, "subtest 'inner' planned 3, ran 1", None)], None, [], None),
    "1..1\n    1.." + "9" * 19 + "\n    ok 1 - x\nok 1 - outer\n": (
        [("outer", 1, False, "subtest's plan has more than 18 digits; ran 1", None)], None, [], None),
    "1..1\n    ok 1 - x\nok 1 - outer\n": ([("outer", 1, True, None, None)], None, [], None),
    "1..1\n    1..1\n    ok 1 - x\nnot ok 1 - outer\n": ([("outer", 1, False, None, None)], None, [], None),
    "1..1\n    1..1\n    ok 1 - x # TODO t\n    ok 2 - y\nok 1 - outer\n": (
        [("outer", 2, False, "subtest planned 1, ran 2", None)], None, [], None),
    "1..1\n    not ok 1 - x # TODO t\n    1..1\nok 1 - outer\n": ([("outer", 1, True, None, None)], None, [], None),
    "1..1\n    ok 1 - a\n        ok 1 - deep\n        not ok 2 - deeper\n    not ok 2 - b\n    1..2\nnot ok 1 - outer\n": (
        [("outer", 3, False, "b > deeper", "failed: b > deeper")], None, [], None),
    "1..1\n        1..2\n        ok 1 - d\n    ok 1 - mid\n    1..1\nnot ok 1 - top\n        ok 1 - e\n": (
        [("top", 1, False, None, None)], None, [], None),
    "1..1\n    # Subtest: mid\n        1..3\n        ok 1 - d\n    ok 1 - mid\n    1..1\nnot ok 1 - top\n": (
        [("top", 1, False, "mid: subtest planned 3, ran 1", "failed: mid: subtest planned 3, ran 1")], None, [], None),
    "1..2\n    ok 1 # SKIP x\n    1..1\nok 1 - gpu\nok 2 - cpu\n": (
        _ok("cpu"), None, ["gpu (all its subtests were skipped)"], None),
    "1..1\n    1..0\nok 1 - empty\n": (_ok("empty"), None, [], None),
    "1..3\nok 1\nBail out! db gone   now\nok 2\n": (_ok("test 1"), "Bail out! db gone now", [], None),
    "1..3\nok 1\nok 3\nok 2\n": (_ok("test 1", "test 3", "test 2"), "test point numbered 3 where 2 was expected", [],
                                 None),
    "1..3\nok 2\nok 3\nok 1\n": (_ok("test 2", "test 3", "test 1"), "test point numbered 2 where 1 was expected", [],
                                 None),
    "1..3\nok\nok 2\nok 9\n": (_ok("test 1", "test 2", "test 9"), "test point numbered 9 where 3 was expected", [],
                               None),
    "1..2\nok 1 - x\nok 2 - x\n": (_ok("x", "x #2"), None, [], None),
    "1..2\nok\nok 2\n": (_ok("test 1", "test 2"), None, [], None),
    "1..1\r\nok 1 - a\r\n": (_ok("a"), None, [], None),
    "1..1\nok 1 - a": (_ok("a"), None, [], None),
    "1..1\nok 1\n1..1\n": (_ok("test 1"), "2 plans (1..N lines) in one stream; a producer prints one", [], None),
    "ok 1\nok 2\n": (_ok("test 1", "test 2"), "no plan (1..N line) after 2 test points: the stream may have been cut short",
                     [], None),
    "1..1\nnot ok 1 - cut\n  ---\n  message: m\n": (
        [("cut", 1, False, "m", "message: m")], "the stream ends inside the YAML block of 'cut': it was cut short",
        [], None),
    "1..2\nok 1 - a\n  ---\n  x\n": (_ok("a"), "the stream ends inside the YAML block of 'a': it was cut short; "
                                            "planned 2, ran 1", [], None),
    "1..1\nok 1\nok 2\n": (_ok("test 1", "test 2"), "planned 1, ran 2", [], None),
    "1..2\nok 1\nok 3\n": (_ok("test 1", "test 3"), "test point numbered 3 where 2 was expected", [], None),
    "1..1\nok 2\n1..1\n": (_ok("test 2"), "2 plans (1..N lines) in one stream; a producer prints one; "
                                         "test point numbered 2 where 1 was expected", [], None),
}


@pytest.mark.parametrize("text", list(CASES), ids=range(len(CASES)))
def test_stream(tmp_path: Path, text: str) -> None:
    assert _read(tmp_path, text) == CASES[text]


def test_yaml_open_at_bail_out_says_only_the_bail(tmp_path: Path) -> None:
    assert _read(tmp_path, "1..2\nnot ok 1 - a\n  ---\nBail out! gone\n")[1] == "Bail out! gone"


def test_secrets_are_scrubbed_everywhere(tmp_path: Path) -> None:
    s = SECRET
    text = (f"1..4\nnot ok 1 - a {s} # TODO {s}\nok 2 - b # SKIP {s}\n"
            f"not ok 3 - c {s}\n  ---\n  message: m {s}\n  ...\n"
            f"    1..1\n    not ok 1 - in {s}\nnot ok 4 - outer\n")
    checks, problem, skipped, _ = _read(tmp_path, text, secrets=(s,))
    assert checks == [(f"a {R}", 1, True, f"TODO {R}: fails as expected", None),
                      (f"c {R}", 1, False, f"m {R}", f"message: m {R}"),
                      ("outer", 1, False, f"in {R}", f"failed: in {R}")]
    assert skipped == [f"b ({R})"] and problem is None


def test_a_subtest_problem_is_scrubbed(tmp_path: Path) -> None:
    text = f"1..1\n    # Subtest: {SECRET}\n    1..3\n    ok 1\nok 1 - outer\n"
    assert _read(tmp_path, text, secrets=(SECRET,))[0] == [("outer", 1, False, f"subtest '{R}' planned 3, ran 1", None)]


def test_test_more_diagnostics_on_stderr_go_to_the_point_they_name(tmp_path: Path) -> None:
    stderr = ("#   Failed test 'named'\n#   at t.pl line 5.\n"
              "#   Failed test 'named'\n#   at t.pl line 9.\n")
    text = "1..3\nnot ok 1 - named\nnot ok 2 - named\nnot ok 3 - other\n"
    checks = _read(tmp_path, text, stderr)[0]
    assert checks == [("named", 1, False, "at t.pl line 5.", "#   Failed test 'named'\n#   at t.pl line 5."),
                      ("named #2", 1, False, "at t.pl line 9.", "#   Failed test 'named'\n#   at t.pl line 9."),
                      ("other", 1, False, None, None)]
    # a passing point takes no block; an unnamed failed point takes the unnamed one
    passing = _read(tmp_path, "1..2\nok 1 - named\nnot ok 2 - named\n", stderr)[0]
    assert passing[1][3] == "at t.pl line 5."
    unnamed = _read(tmp_path, "1..1\nnot ok 1\n", "#   Failed test at t.pl line 3.\n")[0]
    assert unnamed == [("test 1", 1, False, "at t.pl line 3.", "#   Failed test at t.pl line 3.")]


def test_diagnostics_follow_only_a_failed_or_todo_point(tmp_path: Path) -> None:
    text = "1..3\nok 1 - a\n# not kept\nnot ok 2 - b # TODO t\n# kept\nnot ok 3 - c\n# mine\n"
    assert _read(tmp_path, text)[0] == [*_ok("a"), ("b", 1, True, "TODO t: fails as expected", None),
                                        ("c", 1, False, "mine", "# mine")]
    plan_between = "not ok 1 - a\n1..1\n# after the plan\n"
    assert _read(tmp_path, plan_between)[0] == [("a", 1, False, None, None)]


# --- limits -----------------------------------------------------------------------------


def test_a_line_of_exactly_the_line_limit_is_whole_one_byte_more_is_cut(tmp_path: Path) -> None:
    assert LINE_LIMIT == 64 * 1024
    head, tail = "ok 1 - ", " # SKIP why"
    whole = head + "a" * (LINE_LIMIT - len(head) - len(tail)) + tail
    assert len(whole) == LINE_LIMIT
    assert _read(tmp_path, f"1..1\n{whole}\n")[2] == ["a" * 999 + "… (why)"]
    one_more = head + "a" * (LINE_LIMIT - len(head) - len(tail) + 1) + tail
    checks, problem, skipped, _ = _read(tmp_path, f"1..2\n{one_more}\nok 2 - next\n")
    assert skipped == ["a" * 999 + "… (wh)"] and problem is None and checks == _ok("next")
    no_directive = head + "a" * (LINE_LIMIT - len(head)) + tail  # the rest of the line, skipped
    checks, problem, skipped, _ = _read(tmp_path, f"1..2\n{no_directive}\nok 2 - next\n")
    assert skipped == [] and problem is None
    assert [c[0] for c in checks] == ["a" * 999 + "…", "next"]


def test_a_cut_last_line_without_newline_is_read(tmp_path: Path) -> None:
    text = "1..2\nok 1 - a\nok 2 - " + "b" * LINE_LIMIT
    checks, problem, _, _ = _read(tmp_path, text)
    assert problem is None and [c[0] for c in checks] == ["a", "b" * 999 + "…"]


def test_lines_across_read_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "CHUNK", 5)
    monkeypatch.setattr(tap, "LINE_LIMIT", 12)
    text = "1..3\nok 1 - abcde # SKIP\nnot ok 2 - z\n\nok 3 - 12345\n"
    checks, problem, skipped, _ = _read(tmp_path, text)
    assert checks == [("abcde", 1, True, None, None), ("z", 1, False, None, None), ("12345", 1, True, None, None)]
    assert problem is None and skipped == []
    assert _read(tmp_path, "1..1\nok 1 - abcdefgh")[0] == _ok("abcde")


def test_at_most_check_limit_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap, "CHECK_LIMIT", 3)
    assert _read(tmp_path, "1..3\nok 1\nok 2\nok 3\n") == (_ok("test 1", "test 2", "test 3"), None, [], None)
    checks, problem, _, _ = _read(tmp_path, "1..4\nok 1\nok 2\nok 3\nok 4\n")
    assert len(checks) == 3 and problem == "more than 3 test points, the most evalrun reads from one stream"
    nested = _read(tmp_path, "1..1\n    ok 1\n    ok 2\n    ok 3\nok 1\n")[1]
    assert nested == "more than 3 test points, the most evalrun reads from one stream"


def test_diagnostics_kept_per_point_are_bounded(tmp_path: Path) -> None:
    # 64 lines of 63 characters (and a newline) fill the room exactly; the 65th is not kept
    line = "# " + "d" * 61
    text = "1..1\nnot ok 1 - a\n" + "".join(f"{line}\n" for _ in range(70))
    [(_, _, _, _, evidence)] = _read(tmp_path, text)[0]
    kept = 64 * 63 + 63
    assert evidence.endswith(f"\n... ({kept - EVIDENCE_LIMIT} more bytes cut)")
    yaml = "1..1\nnot ok 1 - a\n  ---\n" + "".join(f"  {line}\n" for _ in range(70)) + "  ...\n"
    [(_, _, _, _, evidence)] = _read(tmp_path, yaml)[0]
    assert evidence.endswith(f"\n... ({kept - EVIDENCE_LIMIT} more bytes cut)")


def test_many_subtest_failures_evidence_names_fifty(tmp_path: Path) -> None:
    text = "1..1\n    1..60\n" + "".join(f"    not ok {i} - f{i}\n" for i in range(1, 61)) + "not ok 1 - outer\n"
    [(name, count, passed, message, evidence)] = _read(tmp_path, text)[0]
    assert (name, count, passed, message) == ("outer", 60, False, "f1 (and 59 more)")
    assert evidence.splitlines() == [f"failed: f{i}" for i in range(1, 51)]


def test_a_stream_that_cannot_be_read(tmp_path: Path) -> None:
    report = parse_tap(tmp_path)
    assert (report.checks, report.problem, report.source) == (
        [], f"no TAP output to read: {tmp_path.name} is a directory, not a file", "TAP")


# --- edges a first mutation run found unpinned -------------------------------------------


EDGES = {
    "1..2\nnot ok 1 - a\n  ---\n  message: m\n# after\nnot ok 2 - b\n": (
        [("a", 1, False, "m", "message: m"), ("b", 1, False, None, None)], None, [], None),
    "1..2\nnot ok 1 - a\n  ---\n  not ok 2 - inside\n  ...\nok 2 - b\n": (
        [("a", 1, False, "not ok 2 - inside", "not ok 2 - inside"), *_ok("b")], None, [], None),
    "# Subtest: inner\n    1..3\n    ok 1 - x\nok 1 - outer\n1..1\n": (
        [("outer", 1, False, "subtest 'inner' planned 3, ran 1", None)], None, [], None),
    "1..1\nok 1 - a \\#\n": (_ok("a #"), None, [], None),
    "1..1\nok 1 - a #SKIP why\n": ([], None, ["a (why)"], None),
    "1..1\n    1..2\n    not ok 1 - t # TODO later\n    not ok 2 - real\nnot ok 1 - outer\n": (
        [("outer", 2, False, "real", "failed: real")], None, [], None),
    "1..1\nnot ok 1 - a\r\n# got: 1\r\n": ([("a", 1, False, "got: 1", "# got: 1")], None, [], None),
    "1..1\n ok 1 - x\nok 1 - outer\n": ([("outer", 1, True, None, None)], None, [], None),
}


@pytest.mark.parametrize("text", list(EDGES), ids=range(len(EDGES)))
def test_edge(tmp_path: Path, text: str) -> None:
    assert _read(tmp_path, text) == EDGES[text]


def test_a_long_skip_reason_is_cut_to_two_hundred(tmp_path: Path) -> None:
    assert _read(tmp_path, "1..1\nok 1 - a # SKIP " + "r" * 300 + "\n")[2] == ["a (" + "r" * 197 + "...)"]


def test_a_todo_point_takes_no_test_more_block(tmp_path: Path) -> None:
    stderr = "#   Failed test 'named'\n#   at t.pl line 5.\n"
    checks = _read(tmp_path, "1..2\nnot ok 1 - named # TODO x\nnot ok 2 - named\n", stderr)[0]
    assert checks[1][3] == "at t.pl line 5."


def test_the_diagnostic_room_counts_each_line_and_its_newline(tmp_path: Path) -> None:
    # "#x" costs 3 of the 4,096 characters: 1,366 lines are kept (the last while 1 was left)
    [(_, _, _, _, evidence)] = _read(tmp_path, "1..1\nnot ok 1 - a\n" + "#x\n" * 3000)[0]
    assert evidence.endswith(f"\n... ({1366 * 3 - 1 - EVIDENCE_LIMIT} more bytes cut)")
    [(_, _, _, _, evidence)] = _read(tmp_path, "1..1\nnot ok 1 - a\n" + "#\n" * 3000)[0]
    assert evidence.endswith(f"\n... ({2048 * 2 - 1 - EVIDENCE_LIMIT} more bytes cut)")


def test_a_chunk_that_starts_with_a_newline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "CHUNK", 5)
    assert _read(tmp_path, "1..2\nok 1\n\nok 2\n") == (_ok("test 1", "test 2"), None, [], None)
    # "1..1\n" "ok 1 " "- abc" "\n# x\n": the newline that ends a line opens the next chunk
    assert _read(tmp_path, "1..1\nok 1 - abc\n# x\n") == (_ok("abc"), None, [], None)


def test_a_stream_cut_by_the_read_limit_is_read_up_to_there(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "CHUNK", 5)
    monkeypatch.setattr(tap, "REPORT_LIMIT", 15)
    checks, problem, _, _ = _read(tmp_path, "1..2\nok 1 - a\nok 2 - b\n")
    assert checks == _ok("a")
    assert problem.startswith("the TAP output is larger than") and problem.endswith(": read up to there; planned 2, ran 1")


def test_the_point_limit_is_written_with_thousands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap, "CHECK_LIMIT", 1000)
    text = "1..1001\n" + "".join(f"ok {i}\n" for i in range(1, 1002))
    assert _read(tmp_path, text)[1] == "more than 1,000 test points, the most evalrun reads from one stream"
