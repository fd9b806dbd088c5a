"""The JSON report reader at its limits, message for message: nesting depth, check count, sizes of names,
messages, evidence and metrics, numbers JSON allows and Python cannot hold, and how a refusal names its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalrun.reports_in import json_report
from evalrun.reports_in.json_report import read_json_report
from evalrun.errors import ReportError
from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, CHECK_LIMIT, NAME_LIMIT
from evalrun.results import CheckResult
from evalrun.text import EVIDENCE_LIMIT, MESSAGE_LIMIT

SECRET = "sk-test-0123456789abcdef"
REDACTED = "[redacted by evalrun]"


def _write(tmp_path: Path, data: object | str) -> Path:
    path = tmp_path / "report.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def _error(tmp_path: Path, data: object | str) -> str:
    with pytest.raises(ReportError) as caught:
        read_json_report(_write(tmp_path, data))
    return str(caught.value)


def _check(name: str = "c", assertions: int = 1, passed: bool = True, **more: object) -> dict[str, object]:
    return {"name": name, "assertions": assertions, "passed": passed, **more}


# --- reading the file ----------------------------------------------------------------


def test_no_file_and_no_regular_file(tmp_path: Path) -> None:
    with pytest.raises(ReportError) as caught:
        read_json_report(tmp_path / "absent.json")
    assert str(caught.value) == "no report was written to $EVALRUN_REPORT"
    with pytest.raises(ReportError) as caught:
        read_json_report(tmp_path)
    assert str(caught.value) == "invalid report: $EVALRUN_REPORT is a directory, not a file"


# --- nesting depth ---------------------------------------------------------------------


def _read_edge(tmp_path: Path) -> int:
    """The least nesting json.loads refuses here (it depends on the stack already in use: xdist's is deeper)."""
    lo, hi = 1, 100_000
    while lo < hi:
        mid = (lo + hi) // 2
        if _error(tmp_path, "[" * mid + "]" * mid) == "invalid report: nested too deeply to read":
            hi = mid
        else:
            lo = mid + 1
    return lo


def _depths(tmp_path: Path, step: int = 1, below: int = 100) -> range:
    edge = _read_edge(tmp_path)
    return range(max(1, edge - below), edge + 5, step)


def test_nesting_too_deep_to_read_is_refused(tmp_path: Path) -> None:
    deep = 100_000
    assert _error(tmp_path, '{"checks": [' + "[" * deep + "]" * deep + "]}") == (
        "invalid report: nested too deeply to read")


def test_nesting_shallow_enough_to_read_but_too_deep_to_check_is_refused(tmp_path: Path) -> None:
    # Where json.loads stops and where checking stops depends on the stack already in use: scan the edge.
    depths = _depths(tmp_path)
    messages = {d: _error(tmp_path, '{"checks": [], "metrics": {"m": ' + "[" * d + "]" * d + "}}") for d in depths}
    assert "invalid report: nested too deeply to check" in messages.values()
    assert "invalid report: nested too deeply to read" in messages.values()
    refusals = {"invalid report: nested too deeply to check", "invalid report: nested too deeply to read"}
    assert all(m in refusals or m.startswith("invalid report: metrics.m: [[[[") for m in messages.values())
    assert messages[min(messages)].startswith("invalid report: metrics.m: [[[[")


def test_nesting_too_deep_to_replace_a_lone_surrogate_in_is_refused(tmp_path: Path) -> None:
    def nested(d: int, text: str) -> str:
        return '{"checks": [], "metrics": {"m": "' + text + '", "n": ' + "[" * d + "]" * d + "}}"

    to_read = "invalid report: nested too deeply to read"
    depths = _depths(tmp_path, step=5, below=900)
    plain = {d: _error(tmp_path, nested(d, "x")) for d in depths}
    lone = {d: _error(tmp_path, nested(d, "\\ud800")) for d in depths}
    # somewhere json.loads still reads it, but replacing the surrogate in it goes too deep
    assert any(plain[d] != to_read and lone[d] == to_read for d in depths)
    # below the edge the surrogate is replaced and the nesting is checked (refused as no metric value)
    assert lone[min(lone)].startswith("invalid report: metrics.n: [[[[")


def test_nested_within_reason_reads(tmp_path: Path) -> None:
    report = read_json_report(_write(tmp_path, {"checks": [_check()], "metrics": {"m": 1}}))
    assert report.checks == [CheckResult(name="c", assertions=1, passed=True)]


# --- how many checks ---------------------------------------------------------------------


def test_exactly_the_check_limit_is_read_one_more_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CHECK_LIMIT == 100_000
    monkeypatch.setattr(json_report, "CHECK_LIMIT", 1_000)  # the same rule at a size a unit test reads fast
    checks = [_check(f"c{i}") for i in range(1_000)]
    assert len(read_json_report(_write(tmp_path, {"checks": checks})).checks) == 1_000
    checks.append(_check("one more"))
    assert _error(tmp_path, {"checks": checks}) == (
        "invalid report: checks: 1,001 checks, more than the 1,000 evalrun reads")


def test_a_non_list_checks_or_a_list_at_top_goes_to_the_schema(tmp_path: Path) -> None:
    assert _error(tmp_path, {"checks": "x" * (CHECK_LIMIT + 1)}).startswith("invalid report: checks: 'xxxx")
    assert _error(tmp_path, [0] * (CHECK_LIMIT + 1)).startswith("invalid report: top level: [0, 0,")


# --- names, counts and text at their limits ------------------------------------------------


def test_name_length_limit(tmp_path: Path) -> None:
    assert read_json_report(_write(tmp_path, {"checks": [_check("n" * NAME_LIMIT)]})).checks[0].name == "n" * NAME_LIMIT
    message = _error(tmp_path, {"checks": [_check("n" * (NAME_LIMIT + 1))]})
    assert message.startswith("invalid report: checks[0].name: 'nnnn") and message.endswith("…")
    assert _error(tmp_path, {"checks": [_check("")]}) == "invalid report: checks[0].name: '' should be non-empty"


def test_assertion_count_limits(tmp_path: Path) -> None:
    report = read_json_report(_write(tmp_path, {"checks": [_check("a", ASSERTIONS_LIMIT), _check("z", 0)]}))
    assert [c.assertions for c in report.checks] == [ASSERTIONS_LIMIT, 0]
    assert _error(tmp_path, {"checks": [_check("a", ASSERTIONS_LIMIT + 1)]}) == (
        "invalid report: checks[0].assertions: 1000000001 is greater than the maximum of 1000000000")
    assert _error(tmp_path, {"checks": [_check("a", -1)]}) == (
        "invalid report: checks[0].assertions: -1 is less than the minimum of 0")


def test_a_whole_float_count_is_an_int(tmp_path: Path) -> None:
    [check] = read_json_report(_write(tmp_path, '{"checks": [{"name": "c", "assertions": 3.0, "passed": true}]}')).checks
    assert check.assertions == 3 and type(check.assertions) is int


def test_message_kept_to_its_limit_and_cut_past_it(tmp_path: Path) -> None:
    at, over = "m" * MESSAGE_LIMIT, "m" * (MESSAGE_LIMIT + 7)
    checks = read_json_report(_write(tmp_path, {"checks": [_check("a", message=at), _check("b", message=over)]})).checks
    assert checks[0].message == at
    assert checks[1].message == "m" * MESSAGE_LIMIT + "... (7 more characters cut)"


def test_evidence_kept_to_its_limit_in_bytes_and_cut_past_it(tmp_path: Path) -> None:
    at, over = "e" * EVIDENCE_LIMIT, "é" * EVIDENCE_LIMIT  # two bytes each
    checks = read_json_report(_write(tmp_path, {"checks": [_check("a", evidence=at), _check("b", evidence=over)]})).checks
    assert checks[0].evidence == at
    assert checks[1].evidence == "é" * (EVIDENCE_LIMIT // 2) + f"\n... ({EVIDENCE_LIMIT} more bytes cut)"


def test_every_field_of_a_check_is_kept(tmp_path: Path) -> None:
    judge = "model#" + "a" * 12
    data = {"checks": [_check("a", 2, False, message="why", evidence="saw", judge=judge)]}
    [check] = read_json_report(_write(tmp_path, data)).checks
    assert check == CheckResult(name="a", assertions=2, passed=False, message="why", evidence="saw", judge=judge)


def test_metrics_text_cut_at_the_message_limit_other_values_kept(tmp_path: Path) -> None:
    data = {"checks": [_check()], "metrics": {"at": "t" * MESSAGE_LIMIT, "over": "t" * (MESSAGE_LIMIT + 1),
                                              "n": 1.5, "i": 2, "b": False}}
    report = read_json_report(_write(tmp_path, data))
    assert report.metrics == {"at": "t" * MESSAGE_LIMIT, "over": "t" * MESSAGE_LIMIT + "... (1 more characters cut)",
                              "n": 1.5, "i": 2, "b": False}
    assert report.running is None


def test_running_is_kept_scrubbed_and_cut_to_the_name_limit(tmp_path: Path) -> None:
    data = {"checks": [_check()], "running": SECRET + "r" * NAME_LIMIT}
    report = read_json_report(_write(tmp_path, data), secrets=[SECRET])
    assert report.running == (REDACTED + "r" * NAME_LIMIT)[:NAME_LIMIT]
    assert read_json_report(_write(tmp_path, {"checks": [_check()], "running": "step"})).running == "step"


def test_secrets_are_scrubbed_from_names_messages_evidence_and_metrics(tmp_path: Path) -> None:
    data = {"checks": [_check(f"n {SECRET}", message=f"m {SECRET}", evidence=f"e {SECRET}")],
            "metrics": {"s": f"v {SECRET}", "k": 1}}
    report = read_json_report(_write(tmp_path, data), secrets=["", SECRET])
    assert report.checks == [CheckResult(name=f"n {REDACTED}", assertions=1, passed=True,
                                         message=f"m {REDACTED}", evidence=f"e {REDACTED}")]
    assert report.metrics == {"s": f"v {REDACTED}", "k": 1}
    # an empty secret scrubs nothing, and without secrets the text is as written
    plain = read_json_report(_write(tmp_path, data), secrets=[""])
    assert plain.checks[0].name == f"n {SECRET}" and plain.metrics["s"] == f"v {SECRET}"


def test_a_check_holding_a_secret_only_in_its_name_is_scrubbed(tmp_path: Path) -> None:
    report = read_json_report(_write(tmp_path, {"checks": [_check(f"n {SECRET}")]}), secrets=[SECRET])
    assert report.checks == [CheckResult(name=f"n {REDACTED}", assertions=1, passed=True)]


def test_secrets_given_as_an_iterator_scrub_every_check(tmp_path: Path) -> None:
    data = {"checks": [_check(f"a {SECRET}", message=SECRET), _check(f"b {SECRET}", message=SECRET)]}
    report = read_json_report(_write(tmp_path, data), secrets=iter([SECRET]))
    assert [(c.name, c.message) for c in report.checks] == [(f"a {REDACTED}", REDACTED), (f"b {REDACTED}", REDACTED)]


def test_a_check_with_text_but_no_secrets_is_cut_too(tmp_path: Path) -> None:
    checks = read_json_report(_write(tmp_path, {"checks": [_check(message="x" * (MESSAGE_LIMIT + 1))]})).checks
    assert checks[0].message.endswith("... (1 more characters cut)")


# --- numbers ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "shown"), [("NaN", "NaN"), ("-Infinity", "-Infinity"), ("1e999", "1e999"),
                                             ("1" * 50 + "e999", "1" * 39 + "…")])
def test_numbers_no_float_holds_are_refused(tmp_path: Path, text: str, shown: str) -> None:
    assert _error(tmp_path, '{"checks": [], "metrics": {"m": ' + text + "}}") == (
        f"invalid report: {shown} is not a finite number")


def test_a_finite_float_reads(tmp_path: Path) -> None:
    assert read_json_report(_write(tmp_path, '{"checks": [], "metrics": {"m": 1e308}}')).metrics == {"m": 1e308}


def test_an_integer_of_too_many_digits_and_text_that_is_no_json(tmp_path: Path) -> None:
    assert _error(tmp_path, '{"checks": [], "metrics": {"m": ' + "9" * 5000 + "}}") == (
        "invalid report: not JSON (a number has more digits than Python reads (4300))")
    assert _error(tmp_path, '{"checks": [') == (
        "invalid report: not JSON (Expecting value: line 1 column 13 (char 12))")
    (tmp_path / "report.json").write_bytes(b'{"checks": [], "metrics": {"m": "\xff"}}')
    with pytest.raises(ReportError) as caught:
        read_json_report(tmp_path / "report.json")
    assert str(caught.value).startswith("invalid report: not JSON ('utf-8' codec can't decode byte 0xff")


# --- lone surrogates -------------------------------------------------------------------


def test_a_lone_surrogate_in_a_name_is_refused_naming_the_check(tmp_path: Path) -> None:
    text = '{"checks": [{"name": "ok", "assertions": 1, "passed": true}, 7, {"name": 3}, ' \
           '{"name": "ab\\udc00", "assertions": 1, "passed": true}]}'
    assert _error(tmp_path, text) == (
        "invalid report: checks[3].name 'ab\\udc00' is not valid Unicode (a lone surrogate \\udc00 at character 3); "
        "name checks with text UTF-8 can hold")


def test_a_long_name_with_a_lone_surrogate_is_shortened(tmp_path: Path) -> None:
    text = '{"checks": [{"name": "' + "n" * 100 + '\\ud800", "assertions": 1, "passed": true}]}'
    assert _error(tmp_path, text) == (
        "invalid report: checks[0].name '" + "n" * 78 + "… is not valid Unicode (a lone surrogate \\ud800 at "
        "character 101); name checks with text UTF-8 can hold")


def test_a_lone_surrogate_in_a_report_without_checks(tmp_path: Path) -> None:
    assert _error(tmp_path, '{"metrics": {"m": "\\ud800"}}') == "invalid report: top level: 'checks' is a required property"
    assert _error(tmp_path, '["\\ud800"]') == "invalid report: top level: ['\ufffd'] is not of type 'object'"


def test_a_lone_surrogate_elsewhere_becomes_the_replacement_character(tmp_path: Path) -> None:
    text = '{"checks": [{"name": "c", "assertions": 1, "passed": false, "message": "m\\uD83D", ' \
           '"evidence": "\\udfff"}], "metrics": {"k\\ud800": "v\\uDBFF"}, "running": "r\\ud800"}'
    report = read_json_report(_write(tmp_path, text))
    assert (report.checks[0].message, report.checks[0].evidence) == ("m\ufffd", "\ufffd")
    assert report.metrics == {"k\ufffd": "v\ufffd"} and report.running == "r\ufffd"
    # a paired surrogate escape is one character, not two replacements
    paired = read_json_report(_write(tmp_path, '{"checks": [], "metrics": {"m": "\\ud83d\\ude00"}}'))
    assert paired.metrics == {"m": "\U0001f600"}


# --- how a refusal names its place --------------------------------------------------------


@pytest.mark.parametrize(("data", "message"), [
    ({"checks": [{"name": "a", "assertions": "two", "passed": True}]},
     "invalid report: checks[0].assertions: 'two' is not of type 'integer'"),
    ({"checks": [], "metrics": {"odd key!": [1]}},
     'invalid report: metrics["odd key!"]: [1] is not valid under any of the given schemas'),
    ({"checks": [], "metrics": {"_a-1": [1]}},
     "invalid report: metrics._a-1: [1] is not valid under any of the given schemas"),
    ({"checks": [], "metrics": {"1a": [1]}},
     'invalid report: metrics["1a"]: [1] is not valid under any of the given schemas'),
    ({}, "invalid report: top level: 'checks' is a required property"),
    ({"checks": [{"name": "a", "assertions": 1, "passed": True, "judge": "nobody"}]},
     "invalid report: checks[0].judge: 'nobody' is not valid under any of the given schemas"),
])
def test_a_refusal_names_the_place(tmp_path: Path, data, message) -> None:
    assert _error(tmp_path, data) == message


def test_an_unknown_key_is_refused(tmp_path: Path) -> None:
    assert _error(tmp_path, {"checks": [_check(extra=1)]}) == (
        "invalid report: checks[0]: Additional properties are not allowed ('extra' was unexpected)")
    assert _error(tmp_path, {"checks": [], "extra": 1}) == (
        "invalid report: top level: Additional properties are not allowed ('extra' was unexpected)")


def test_the_schema_is_checked_with_its_references_inlined() -> None:
    # the same schema, twice as fast to check: no $ref is resolved per report
    text = json.dumps(json_report._validator().schema)
    assert "$ref" not in text and "$defs" not in text and '"Check"' in text


def test_an_error_at_the_top_sorts_before_errors_inside(tmp_path: Path) -> None:
    assert _error(tmp_path, {"metrics": {"m": [1]}}) == (
        "invalid report: top level: 'checks' is a required property (and 1 more)")


def test_the_first_error_by_place_is_named_with_how_many_more(tmp_path: Path) -> None:
    bad = {"name": "a", "assertions": "x", "passed": True}
    assert _error(tmp_path, {"checks": [bad]}).endswith("'x' is not of type 'integer'")
    assert _error(tmp_path, {"checks": [bad, bad]}).endswith("'x' is not of type 'integer' (and 1 more)")
    # 50 errors shown at most: 50 say how many, 51 and more say "and more"
    assert _error(tmp_path, {"checks": [bad] * 50}).endswith(" (and 49 more)")
    assert _error(tmp_path, {"checks": [bad] * 51}).endswith("'x' is not of type 'integer' (and more)")
    # sorted by place: checks[2] before checks[10], whatever order jsonschema found them in
    checks = [_check(f"c{i}") for i in range(11)]
    checks[10]["assertions"] = "ten"
    checks[2]["assertions"] = "two"
    assert _error(tmp_path, {"checks": checks}) == (
        "invalid report: checks[2].assertions: 'two' is not of type 'integer' (and 1 more)")


def test_a_long_place_and_a_long_value_are_shortened(tmp_path: Path) -> None:
    key = "k" * 300
    message = _error(tmp_path, {"checks": [], "metrics": {key: [1]}})
    assert message.startswith("invalid report: metrics." + "k" * 191 + "…: [1]")
    odd = " " * 100
    message = _error(tmp_path, {"checks": [], "metrics": {odd: [1]}})
    assert message.startswith('invalid report: metrics["' + " " * 59 + '\\u2026"]: [1]')  # the key as JSON, ASCII
    value = "v" * 1000
    message = _error(tmp_path, {"checks": [{"name": "a", "assertions": value, "passed": True}]})
    assert message == "invalid report: checks[0].assertions: '" + "v" * 298 + "…"
