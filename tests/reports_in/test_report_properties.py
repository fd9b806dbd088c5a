"""Property tests: any bytes a scorer can leave give a ParsedReport or a one-line ReportError.

Hypothesis drives every report parser (JSON report, TAP, JUnit) with raw
bytes and with inputs built from each format's own pieces, so the runs reach
deep into the parsers rather than failing at the first byte; the rules
(``judge``) are then applied to whatever came out. Bounded time and memory
come from the readers' caps (tests/reports_in/test_report_files.py); here no input may
raise anything but ReportError, and every message is one line of bounded length.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from evalrun.errors import ReportError
from evalrun.secrets import scrub
from evalrun.reports_in.json_report import read_json_report
from evalrun.reports_in.junit import parse_junit
from evalrun.reports_in.parsed import ParsedReport
from evalrun.reports_in.rules import judge
from evalrun.reports_in.tap import parse_tap

SETTINGS = settings(
    max_examples=150,
    deadline=None,  # a shared, loaded machine: no per-example stopwatch
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _through(parse, data: bytes, *, raises: bool = True) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report"
        path.write_bytes(data)
        try:
            parsed = parse(path)
        except ReportError as exc:
            assert raises, f"{parse} raised on bad input: {exc}"
            text = str(exc)
            assert text and "\n" not in text and len(text) <= 1000, text
            return
    assert isinstance(parsed, ParsedReport)
    for check in parsed.checks:
        assert check.name and len(check.name) <= 1000
        assert check.message is None or len(check.message) <= 600
        assert check.evidence is None or len(check.evidence.encode()) <= 2200
    if parsed.problem is not None:
        assert "\n" not in parsed.problem
    for exit_code in (0, 1):
        verdict = judge(parsed, None, exit_code, "")
        assert verdict.message is None or "\n" not in verdict.message


# --- JSON -----------------------------------------------------------------------

_scalars = st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats() | st.text()
_json = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_check = st.fixed_dictionaries(
    {"name": st.text(max_size=20), "assertions": st.integers(min_value=-2, max_value=2 * 10**9), "passed": st.booleans()},
    optional={"message": st.text() | st.none() | st.integers(), "evidence": st.text(), "extra": _json},
)
_report = st.fixed_dictionaries(
    {"checks": st.lists(_check | _json, max_size=5)},
    optional={"metrics": st.dictionaries(st.text(max_size=10), _scalars | _json, max_size=4)},
)


def _json_text(value: object) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


@SETTINGS
@given(st.binary(max_size=2000))
def test_json_report_any_bytes(data: bytes) -> None:
    _through(read_json_report, data)


@SETTINGS
@given(_report | _json)
def test_json_report_any_json(value: object) -> None:
    _through(read_json_report, _json_text(value))


@SETTINGS
@given(_report, st.sampled_from(["[" * 5000, "9" * 5000, "NaN", "-Infinity", "1e999", '"\\ud800"', "{", "]"]),
       st.integers(min_value=0, max_value=200))
def test_json_report_with_hostile_splices(value: object, splice: str, at: int) -> None:
    text = _json_text(value).decode()
    at = min(at, len(text))
    _through(read_json_report, (text[:at] + splice + text[at:]).encode())


# --- TAP ------------------------------------------------------------------------

_tap_piece = st.sampled_from([
    "ok " + "9" * 5000, "1.." + "9" * 5000, "not ok 1 - a", "ok 2 # todo", "ok", "not ok", " ", "    ", "-", "1..", "0", "1", "3", "9" * 30, "9" * 5000, "#", "# SKIP", "# TODO", " skip",
    "todo", "\\", "\\#", "---", "...", "  ---", "  ...", "  message: boom", "  error: |-", "Bail out!",
    "# Subtest: s", "TAP version 14", "pragma +strict", "\t", "\r", "é", "\ufffd", "#   Failed test 'a'",
    "#          got: '1'", "# Looks like you failed",
])
_tap_line = st.lists(_tap_piece | st.text(max_size=5), max_size=8).map("".join)
_tap_stream = st.lists(_tap_line, max_size=40).map("\n".join)


@SETTINGS
@given(st.binary(max_size=3000) | _tap_stream.map(lambda text: text.encode("utf-8", "surrogatepass")))
def test_tap_any_bytes(data: bytes) -> None:
    _through(parse_tap, data, raises=False)  # TAP never raises: a garbled stream is a problem


@SETTINGS
@given(_tap_stream, _tap_stream)
def test_tap_any_stream_with_stderr(stream: str, stderr: str) -> None:
    _through(lambda p: parse_tap(p, stderr=stderr, secrets={"sk-test-secret"}), stream.encode(), raises=False)


@st.composite
def _tap_tree(draw: st.DrawFn, depth: int = 0) -> tuple:
    """A test point: ``(ok, directive, children)``; a group holds at least one leaf that is not skipped."""
    ok = draw(st.booleans())
    if depth < 3 and draw(st.booleans()):
        children = draw(st.lists(_tap_tree(depth + 1), min_size=0, max_size=3))
        children.append((draw(st.booleans()), draw(st.sampled_from([None, "todo"])), []))
        return ok, draw(st.sampled_from([None, None, "todo"])), draw(st.permutations(children))
    return ok, draw(st.sampled_from([None, None, "todo", "skip"])), []


def _tap_lines(points: list[tuple], indent: int, path: str) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}1..{len(points)}"]
    for number, (ok, directive, children) in enumerate(points, 1):
        name = f"{path}{number}"
        if children:
            lines.append(f"{pad}# Subtest: {name}")
            lines += _tap_lines(children, indent + 4, f"{name}.")
        directive_text = f" # {directive.upper()} why" if directive else ""
        lines.append(f"{pad}{'ok' if ok else 'not ok'} {number} - {name}{directive_text}")
    return lines


def _tap_leaves(point: tuple) -> int:
    ok, directive, children = point
    if directive == "skip":
        return 0
    return sum(_tap_leaves(child) for child in children) if children else 1


def _tap_failures(children: list[tuple], path: str) -> list[str]:
    """What a group's failed, non-TODO points below it are, as the parent's message names them."""
    out: list[str] = []
    for number, (ok, directive, grandchildren) in enumerate(children, 1):
        name = f"{path}{number}"
        if directive is not None:
            continue
        inner = _tap_failures(grandchildren, f"{name}.")
        out += [f"{name} > {failure}" for failure in inner]
        if not ok and not inner:
            out.append(name)
    return out


@SETTINGS
@given(st.lists(_tap_tree(), min_size=1, max_size=4))
def test_tap_a_parent_passes_only_if_none_of_its_non_todo_points_failed(points: list[tuple]) -> None:
    """Whatever a parent point says, ``ok`` or ``not ok``: it passes only if it and every point below it
    passed, a TODO point (and what is under it) aside; its message names the first that failed."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report"
        path.write_text("\n".join(["TAP version 14", *_tap_lines(points, 0, "p")]) + "\n")
        report = parse_tap(path)
    assert report.problem is None
    expected = []
    for number, point in enumerate(points, 1):
        ok, directive, children = point
        if directive == "skip":
            continue
        failures = _tap_failures(children, f"p{number}.")
        passed = directive == "todo" or (ok and not failures)
        message = None
        if directive is None and failures:
            message = failures[0] + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else "")
        expected.append((f"p{number}", _tap_leaves(point), passed, message))
    got = [(c.name, c.assertions, c.passed, None if c.passed else c.message) for c in report.checks]
    assert got == expected


# --- JUnit ----------------------------------------------------------------------

_attr_value = st.sampled_from(["", "x", "test", "pytest", "3", "3.0", "3.5", "-1", "9" * 5000, "a > b", "&amp;", "&lt;",
                               "pytest.xfail", "todo", "skipped"]) | st.text(
    alphabet=st.characters(blacklist_characters='<&"', blacklist_categories=("Cs", "Cc")), max_size=6)
_attr = st.tuples(st.sampled_from(["name", "classname", "assertions", "message", "type", "file", "filepath", "tests",
                                   "skipped", "failures", "errors", "value"]), _attr_value).map(
    lambda kv: f' {kv[0]}="{kv[1]}"')
_tag = st.sampled_from(["testsuites", "testsuite", "testcase", "failure", "error", "skipped", "system-out", "x",
                        "properties", "property"])


@st.composite
def _xml(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(_tag) if depth else draw(st.sampled_from(["testsuites", "testsuite", "testcase", "html"]))
    attrs = "".join(draw(st.lists(_attr, max_size=3, unique_by=lambda a: a.split("=")[0])))
    if depth >= 4 or draw(st.booleans()):
        return f"<{tag}{attrs}/>"
    pieces = st.sampled_from(["text", "&amp;", " ", "<!-- c -->", f'<testcase name="n" assertions="{"9" * 5000}"/>',
                              '<testcase name="n"><skipped type="pytest.xfail"/><failure/></testcase>',
                              '<testcase name="n" file="a.js"/>', '<testcase name="n" file="b.js"/>',
                              '<testcase name="n"><properties><property name="status" value="todo"/></properties>'
                              '</testcase>', '<testsuite name="s" tests="1" failures="0" skipped="0">'
                              '<testcase name="n"/><testcase name="m"/></testsuite>'])
    children = draw(st.lists(_xml(depth + 1) | pieces, max_size=4))
    return f"<{tag}{attrs}>{''.join(children)}</{tag}>"


@SETTINGS
@given(st.binary(max_size=2000))
def test_junit_any_bytes(data: bytes) -> None:
    _through(parse_junit, data)


@SETTINGS
@given(_xml(), st.sampled_from(["", '<?xml version="1.0"?>', "<!DOCTYPE x>", '<!DOCTYPE x [<!ENTITY a "b">]>']))
def test_junit_any_xml_shaped_input(body: str, prolog: str) -> None:
    _through(parse_junit, (prolog + body).encode())


# --- the JSON report's fast shape check -------------------------------------------

from pydantic import TypeAdapter  # noqa: E402

from evalrun.reports_in.json_report import _fits, _report_shape, _validator  # noqa: E402
from evalrun.reports_in.report_model import Report  # noqa: E402
from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, NAME_LIMIT  # noqa: E402


def test_the_fast_shape_is_the_published_report_model() -> None:
    # The TypedDicts the fast path validates with must accept exactly what the Report model does.
    def shape(schema: object) -> object:  # what is accepted: no titles, descriptions or output defaults
        if isinstance(schema, dict):
            return {k: shape(v) for k, v in schema.items() if k not in ("title", "description", "default")}
        if isinstance(schema, list):
            return [shape(v) for v in schema]
        return schema

    fast = json.loads(json.dumps(_report_shape().json_schema()).replace("_CheckShape", "ReportCheck"))
    model = TypeAdapter(Report).json_schema()
    assert shape(fast) == shape(model)
    assert fast["$defs"]["ReportCheck"]["properties"]["assertions"]["maximum"] == 1_000_000_000  # not vacuous


@SETTINGS
@given(_report | _json)
def test_what_the_fast_shape_accepts_the_published_schema_accepts(value: object) -> None:
    try:
        _report_shape().validate_python(value, strict=True)
    except Exception:  # noqa: BLE001 - refused: jsonschema decides, as before
        return
    assert _validator().is_valid(value)


# What a scorer writes: a report of exactly the schema's types.
_plain_report = st.fixed_dictionaries(
    {"checks": st.lists(st.fixed_dictionaries(
        {"name": st.text(min_size=1, max_size=20), "assertions": st.integers(0, ASSERTIONS_LIMIT),
         "passed": st.booleans()},
        optional={"message": st.none() | st.text(max_size=20), "evidence": st.none() | st.text(max_size=20),
                  "judge": st.none() | st.just("gpt-4o#0123456789ab")},
    ), min_size=1, max_size=4)},
    optional={"metrics": st.dictionaries(st.text(max_size=10), st.integers() | st.floats(allow_nan=False)
                                         | st.text(max_size=5) | st.booleans(), max_size=3),
              "running": st.none() | st.text(max_size=10)},
)
# One change at the schema's edge, where a plain-Python check most easily disagrees with pydantic's strict mode:
# a bool or a float for a count, a name at its length limit, a judge with a final newline, a key the schema lacks.
_EDGES = {
    "assertions": [True, False, 3.0, -1, 0, ASSERTIONS_LIMIT, ASSERTIONS_LIMIT + 1, "1", None],
    "name": ["", "a" * NAME_LIMIT, "é" * NAME_LIMIT, "a" * (NAME_LIMIT + 1), 5, None],
    "passed": [0, 1, "true", None],
    "message": [1, True, [], None, ""],
    "evidence": [1, False, {}, None],
    "judge": ["gpt#0123456789ab", "gpt#0123456789ab\n", "gpt#0123456789AB", "#0123456789ab", "m" * 100 + "#0123456789ab",
              "m" * 101 + "#0123456789ab", "gpt#0123456789abc", 7, None],
}


@st.composite
def _edge_report(draw: st.DrawFn) -> object:
    report = json.loads(json.dumps(draw(_plain_report)))
    check = report["checks"][draw(st.integers(0, len(report["checks"]) - 1))]
    where = draw(st.sampled_from(["check", "drop", "extra-check", "extra-top", "metric-key", "metric-value",
                                  "running", "checks", "top"]))
    if where == "check":
        key = draw(st.sampled_from(sorted(_EDGES)))
        check[key] = draw(st.sampled_from(_EDGES[key]))
    elif where == "drop":
        check.pop(draw(st.sampled_from(["name", "assertions", "passed"])))
    elif where == "extra-check":
        check[draw(st.sampled_from(["extra", "Name", "rate"]))] = 1
    elif where == "extra-top":
        report[draw(st.sampled_from(["extra", "Checks", "version"]))] = 1
    elif where == "metric-key":
        report["metrics"] = {draw(st.sampled_from(["a" * NAME_LIMIT, "a" * (NAME_LIMIT + 1), ""])): 1}
    elif where == "metric-value":
        report["metrics"] = {"m": draw(st.sampled_from([None, [], {}, 1, 1.5, "x", True]))}
    elif where == "running":
        report["running"] = draw(st.sampled_from([1, None, "", [], True]))
    elif where == "checks":
        report["checks"] = draw(st.sampled_from([{}, "x", None, [], [[]], [None]]))
    else:
        return draw(st.sampled_from([[report], None, "x", {}]))
    return report


def _one(**change: object) -> dict:
    check = {"name": "a", "assertions": 1, "passed": True}
    top = {k: change.pop(k) for k in ("metrics", "running", "extra") if k in change}
    return {"checks": [{**check, **change}], **top}


@SETTINGS
@given(_edge_report() | _report | _json)
@example(_one(assertions=True)).via("a bool is no count")
@example(_one(assertions=3.0)).via("nor a float")
@example(_one(name="a" * (NAME_LIMIT + 1))).via("a name past its limit")
@example(_one(name="")).via("an empty name")
@example(_one(passed=0)).via("an int is no bool")
@example(_one(message=1)).via("a message is text")
@example(_one(judge="gpt#0123456789ab\n")).via("a judge with a final newline")
@example(_one(rate=1)).via("a key a check does not have")
@example(_one(extra=1)).via("a key a report does not have")
@example(_one(metrics={"a" * (NAME_LIMIT + 1): 1})).via("a metric name past its limit")
@example(_one(metrics={"m": None})).via("a metric of no type the schema has")
@example(_one(running=1)).via("running is text")
def test_what_the_plain_check_takes_the_strict_validator_takes(value: object) -> None:
    # The plain check may send a good report to the validator, never pass one it would refuse.
    if _fits(value):
        _report_shape().validate_python(value, strict=True)


@SETTINGS
@given(_plain_report)
def test_a_report_of_the_schema_s_own_types_takes_the_plain_check(report: dict) -> None:
    # Not vacuous: what a scorer writes (the SDK's reports) never needs the validator built.
    assert _fits(report)


NOWHERE = "\x00never-in-any-report\x00"


@SETTINGS
@given(st.lists(st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=20), "assertions": st.integers(0, 5), "passed": st.booleans()},
    optional={"message": st.none() | st.text(max_size=700), "evidence": st.none() | st.text(max_size=3000)},
), max_size=6, unique_by=lambda c: c["name"]))
def test_checks_taken_as_they_are_equal_checks_built_field_by_field(checks: list) -> None:
    # A secret that occurs nowhere sends every check down the field-by-field path. "Nowhere" counts its
    # pieces too: a name holding 8 characters of it in a row ("y-report") is redacted, as it must be.
    assume(all(scrub(str(v), [NOWHERE]) == str(v) for check in checks for v in check.values()))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.json"
        path.write_text(json.dumps({"checks": checks}), encoding="utf-8")
        assert read_json_report(path).checks == read_json_report(path, [NOWHERE]).checks


def test_a_check_named_or_explained_over_lines_fails_its_eval_in_one_line(tmp_path: Path) -> None:
    for checks in ([{"name": "\n", "assertions": 0, "passed": False}],
                   [{"name": "a\nb", "assertions": 1, "passed": False, "message": "x\r\ny"}],
                   [{"name": "d\nd", "assertions": 1, "passed": True}] * 2):
        path = tmp_path / "report.json"
        path.write_text(json.dumps({"checks": checks}), encoding="utf-8")
        verdict = judge(read_json_report(path), None, 0, "")
        assert verdict.message and "\n" not in verdict.message and "\r" not in verdict.message
        assert verdict.checks[0].name == checks[0]["name"]  # the check itself keeps its name


# --- pytest's report log -----------------------------------------------------------

from evalrun.reports_in.reportlog import parse_reportlog  # noqa: E402

_nodeid = st.sampled_from(["t.py::a", "t.py::b[case0]", "", "x" * 2000]) | st.text(max_size=8)
_longrepr = st.one_of(
    st.none(), st.text(max_size=20), st.lists(st.text(max_size=10) | st.integers(), max_size=4),
    st.fixed_dictionaries({}, optional={"reprcrash": st.fixed_dictionaries(
        {}, optional={"message": st.text(max_size=20) | st.integers(), "path": st.text(max_size=5),
                      "lineno": st.integers() | st.text(max_size=3)}) | _json, "longrepr": _json}),
    _json,
)
_log_record = st.fixed_dictionaries(
    {"$report_type": st.sampled_from(["TestReport", "SubTestReport", "CollectReport", "SessionStart", "SessionFinish",
                                      "WarningMessage", "x"])},
    optional={
        "nodeid": _nodeid | _json, "when": st.sampled_from(["setup", "call", "teardown", None, 3]),
        "outcome": st.sampled_from(["passed", "failed", "skipped", None, 1]), "longrepr": _longrepr,
        "wasxfail": st.text(max_size=8) | st.none() | st.integers(),
        "_subtest.context": st.fixed_dictionaries({}, optional={"msg": _scalars, "kwargs": _json}) | _json,
    },
)


@SETTINGS
@given(st.binary(max_size=2000))
def test_reportlog_any_bytes(data: bytes) -> None:
    _through(parse_reportlog, data)


@SETTINGS
@given(st.lists(_log_record | _json, max_size=12), st.sampled_from(["\n", "\r\n", "\n\n"]))
def test_reportlog_any_records(records: list[object], newline: str) -> None:
    text = newline.join(json.dumps(r, allow_nan=True) for r in records)
    _through(lambda p: parse_reportlog(p, secrets={"sk-test-secret"}), text.encode())
