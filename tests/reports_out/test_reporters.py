"""CI reporters: JUnit XML (checked against the junit-10 schema's structure), Markdown, GitHub annotations."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from evalrun.errors import ReportError
from evalrun.reports_in.junit import parse_junit
from evalrun.reports_out.github import append_github_step_summary, github_annotations
from evalrun.reports_out.junit import render_junit, write_junit
from evalrun.reports_out.markdown import render_markdown, write_markdown
from evalrun.results import (
    BaselineChange, BaselineComparison, CheckResult, EvalResult, NetworkIsolation, RunResults, SkippedTest, Status,
    validate_results,
)

from harness.junit_schema import published_junit_schema

NASTY = 'insert as user B\nsucceeded | 100% <script>alert(1)</script> `tick` *star*'


def _eval(name: str, status: Status, **fields: object) -> EvalResult:
    return EvalResult(name=name, tier="t2", dir=f"evals/{name}", status=status, duration_s=1.25, **fields)


def _results(**overrides: object) -> RunResults:
    evals = [
        _eval(
            "rls",
            Status.PASSED,
            checks=[CheckResult(name="rows are isolated", assertions=4, passed=True),
                    CheckResult(name="owner enforced", assertions=2, passed=True)],
            metrics={"time_to_ready_ms": 1840, "model": {"calls": 3}},
        ),
        _eval(
            "pipes | <b>",
            Status.FAILED,
            message="1 of 2 checks failed",
            checks=[CheckResult(name="ok one", assertions=1, passed=True),
                    CheckResult(name="forged, insert: refused", assertions=2, passed=False, message=NASTY,
                                evidence="state: ```row 17```\n\x1b[31mred\x1b[0m\x00nul")],
            output_tail="scorer said \x1b[1mbold\x1b[0m",
            exit_code=1,
        ),
        _eval("crash", Status.ERROR, message="scorer exited 3 without a report", exit_code=3,
              output_tail="Traceback (most recent call last):\nValueError: boom"),
        _eval("slow", Status.TIMEOUT, message="timed out after 5.0 s; process group killed"),
        _eval("quiet", Status.FAILED, message="scorer exited 1 although every check passed", exit_code=1,
              checks=[CheckResult(name="fine", assertions=1, passed=True)]),
        _eval("needs-key", Status.SKIPPED, message="env OPENAI_API_KEY is not set"),
        _eval("spent", Status.BUDGET, message="model budget of 100 calls exhausted"),
    ]
    baseline = BaselineComparison(
        path="baselines/t2.toml",
        exists=True,
        regressions=[
            BaselineChange(eval="rls", check="gone check", kind="vanished-check", baseline=3, current=None,
                           message='check "gone check" vanished (baseline 3 assertions)'),
            BaselineChange(eval="rls", check="rows are isolated", kind="weakened", baseline=6, current=4,
                           message='check "rows are isolated" asserts less: 6 -> 4'),
            BaselineChange(eval="removed-eval", check=None, kind="vanished-eval", baseline=None, current=None,
                           message='eval "removed-eval" is in the baseline but not in the manifest'),
        ],
        stale=[BaselineChange(eval="rls", check="owner enforced", kind="new-check", baseline=None, current=2,
                              message='new check "owner enforced" (2 assertions)')],
        not_compared=["needs-key", "spent"],
        update_command="evalrun baseline --update t2",
    )
    data: dict[str, object] = dict(
        evalrun_version="0.1.0", tier="t2", manifest="manifest.toml", started_at="2025-01-01T00:00:00Z",
        finished_at="2025-01-01T00:01:00Z", evals=evals, baseline=baseline, exit_code=1,
    )
    data.update(overrides)
    return validate_results(data)


# --- JUnit ------------------------------------------------------------------
# No JUnit XSD ships inside a PyPI or Debian package (checked: junitparser, junit2html, xunitparser,
# unittest-xml-reporting, junit-xml wheels; Debian junit5, python3-junitxml, python3-xmlrunner,
# libtap-formatter-junit-perl, libtap-harness-junit-perl), and no XSD validator is a dependency. So the
# rules of Jenkins' junit-10.xsd (the schema pytest tests its own output against) are checked here by
# hand, with two documented departures: <error> (the XSD misspells it "errors"; every reader takes
# <error>) and testcase "assertions" (Testmo's common JUnit format; readers ignore what they don't know).

_SUREFIRE_TIME = re.compile(r"^(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?$")
_ATTRS = {
    "testsuites": ({"name", "time", "tests", "failures", "errors"}, set()),
    "testsuite": ({"name", "tests", "failures", "errors", "group", "time", "skipped", "timestamp", "hostname", "id",
                   "package", "file", "log", "url", "version"}, {"name", "tests", "failures", "errors"}),
    "testcase": ({"name", "time", "classname", "group", "assertions"}, {"name"}),
    "property": ({"name", "value"}, {"name", "value"}),
    "properties": (set(), set()),
    "failure": ({"type", "message"}, set()),
    "error": ({"type", "message"}, set()),
    "skipped": ({"type", "message"}, set()),
    "system-out": (set(), set()),
    "system-err": (set(), set()),
}
_CHILDREN = {
    "testsuites": {"testsuite"},
    "testsuite": {"testsuite", "properties", "testcase", "system-out", "system-err"},
    "testcase": {"skipped", "error", "failure", "system-out", "system-err"},
    "properties": {"property"},
}


def _check_junit_10(element: ET.Element, where: str = "") -> None:
    here = f"{where}/{element.tag}"
    allowed, required = _ATTRS[element.tag]
    assert set(element.attrib) <= allowed, f"{here}: attributes {set(element.attrib) - allowed} not in the schema"
    assert required <= set(element.attrib), f"{here}: missing {required - set(element.attrib)}"
    if "time" in element.attrib:
        assert _SUREFIRE_TIME.match(element.get("time", "")), f"{here}: time {element.get('time')!r}"
    for key in ("tests", "failures", "errors", "skipped", "assertions"):
        if key in element.attrib:
            assert element.get(key, "").isdigit(), f"{here}: {key}={element.get(key)!r} is not a count"
    children = {child.tag for child in element}
    assert children <= _CHILDREN.get(element.tag, set()), f"{here}: unexpected children {children}"
    for child in element:
        _check_junit_10(child, here)


def _junit(tmp_path: Path, results: RunResults | None = None) -> ET.Element:
    path = tmp_path / "out" / "junit.xml"
    write_junit(results or _results(), path)
    return ET.parse(path).getroot()


def test_junit_follows_the_junit_10_schema_structure(tmp_path: Path) -> None:
    root = _junit(tmp_path)

    assert root.tag == "testsuites"
    _check_junit_10(root)


def test_structure_check_rejects_what_the_schema_rejects() -> None:
    """The hand-written schema check can fail: otherwise the test above proves nothing."""
    bad = ET.fromstring('<testsuites><testsuite name="x" tests="1" failures="0"><testcase/></testsuite></testsuites>')
    with pytest.raises(AssertionError, match="missing"):
        _check_junit_10(bad)


def test_junit_suite_per_eval_with_counts(tmp_path: Path) -> None:
    root = _junit(tmp_path)
    suites = {s.get("name"): s for s in root.findall("testsuite")}

    assert list(suites) == ["rls", "pipes | <b>", "crash", "slow", "quiet", "needs-key", "spent", "evalrun baseline"]
    for suite in suites.values():
        cases = suite.findall("testcase")
        assert suite.get("tests") == str(len(cases))
        assert suite.get("failures") == str(sum(c.find("failure") is not None for c in cases))
        assert suite.get("errors") == str(sum(c.find("error") is not None for c in cases))
        assert suite.get("skipped") == str(sum(c.find("skipped") is not None for c in cases))
    assert root.get("tests") == str(sum(int(s.get("tests", "0")) for s in suites.values()))
    assert root.get("failures") == "5"  # a failed check, "quiet", 2 regressions in rls, the vanished eval
    assert root.get("errors") == "2"
    assert suites["rls"].get("time") == "1.250"


def test_junit_checks_failures_and_properties(tmp_path: Path) -> None:
    root = _junit(tmp_path)
    rls = root.find("testsuite[@name='rls']")
    assert rls is not None
    assert rls[0].tag == "properties"  # first, as the schema orders it
    props = {p.get("name"): p.get("value") for p in rls.iter("property")}
    assert props["metric.time_to_ready_ms"] == "1840"
    assert props["metric.model"] == '{"calls": 3}'
    assert props["tier"] == "t2" and props["status"] == "passed"
    case = rls.find("testcase[@name='rows are isolated']")
    assert case is not None and case.get("assertions") == "4" and case.get("classname") == "t2.rls"

    failed = root.find("testsuite[@name='pipes | <b>']/testcase[@name='forged, insert: refused']/failure")
    assert failed is not None
    assert failed.get("message") == NASTY  # attribute escaping keeps newlines and markup intact
    assert failed.text is not None and "red" in failed.text and "\x1b" not in failed.text
    assert "\\x00nul" in failed.text  # a NUL, which XML cannot carry, is spelled out


def test_junit_eval_level_cases(tmp_path: Path) -> None:
    root = _junit(tmp_path)

    def eval_case(suite: str) -> ET.Element:
        found = root.find(f"testsuite[@name='{suite}']/testcase[@name='(eval)']")
        assert found is not None, suite
        return found

    skipped = eval_case("needs-key").find("skipped")
    assert skipped is not None and skipped.get("message") == "skipped: env OPENAI_API_KEY is not set"
    assert eval_case("spent").find("skipped") is not None
    error = eval_case("crash").find("error")
    assert error is not None and error.get("message") == "scorer exited 3 without a report"
    assert error.text is not None and "ValueError: boom" in error.text
    timeout = eval_case("slow").find("error")
    assert timeout is not None and timeout.get("type") == "timeout" and "timed out" in (timeout.get("message") or "")
    quiet = eval_case("quiet").find("failure")
    assert quiet is not None and quiet.get("message") == "scorer exited 1 although every check passed"
    assert root.find("testsuite[@name='pipes | <b>']/testcase[@name='(eval)']") is None  # its check says it
    assert len(root.findall("testsuite[@name='needs-key']/testcase")) == 1


def test_junit_regressions_are_failures_named_for_the_check(tmp_path: Path) -> None:
    root = _junit(tmp_path)

    vanished = root.find("testsuite[@name='rls']/testcase[@name='baseline: check \"gone check\" vanished']/failure")
    assert vanished is not None and vanished.get("type") == "baseline"
    weakened = root.find("testsuite[@name='rls']/testcase[@name='baseline: check \"rows are isolated\" asserts less']")
    assert weakened is not None
    failure = weakened.find("failure")
    assert failure is not None and failure.get("message") == 'check "rows are isolated" asserts less: 6 -> 4'
    orphan = root.find("testsuite[@name='evalrun baseline']/testcase[@name='baseline: eval \"removed-eval\" vanished']")
    assert orphan is not None and orphan.find("failure") is not None


def test_junit_output_reads_back_as_a_junit_report(tmp_path: Path) -> None:
    """Our own JUnit reader takes what our writer wrote: names, counts and outcomes survive."""
    path = tmp_path / "junit.xml"
    write_junit(_results(), path)

    report = parse_junit(path)

    checks = {c.name: c for c in report.checks}
    assert checks["t2.rls.rows are isolated"].assertions == 4
    assert checks["t2.pipes | <b>.forged, insert: refused"].passed is False
    assert checks["t2.crash.(eval)"].message == "error: scorer exited 3 without a report"
    assert "t2.needs-key.(eval) (skipped: env OPENAI_API_KEY is not set)" in report.skipped


def test_junit_write_replaces_the_file_atomically(tmp_path: Path) -> None:
    path = tmp_path / "junit.xml"
    path.write_text("old, torn <testsuites")

    write_junit(_results(exit_code=0), path)

    assert ET.parse(path).getroot().tag == "testsuites"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml"]  # no temp file left behind


def test_junit_empty_run(tmp_path: Path) -> None:
    root = ET.fromstring(render_junit(_results(evals=[], baseline=None, exit_code=5)))

    assert root.tag == "testsuites" and root.get("tests") == "0" and list(root) == []


# --- Markdown ---------------------------------------------------------------


def _html(markdown: str) -> str:
    return MarkdownIt("commonmark").enable("table").render(markdown)


def test_markdown_verdict_counts_and_table() -> None:
    text = render_markdown(_results())

    assert text.startswith("## ❌ evalrun t2: failed (exit 1)\n")
    assert "**7 evals**: 1 passed, 2 failed, 1 error, 1 timeout, 1 skipped, 1 budget · 5 checks, 10 assertions" in text
    html = _html(text)
    table = html[html.index("<table>") : html.index("</table>")]
    rows = table.split("<tr>")[1:]
    assert len(rows) == 1 + 7  # header + one per eval: a "|" in an eval name did not split a row
    assert all(row.count("<td") + row.count("<th") == 5 for row in rows)
    assert "pipes | &lt;b&gt;" in table


def test_markdown_failures_regressions_skips_and_stale() -> None:
    text = render_markdown(_results())
    html = _html(text)

    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "check <strong>forged, insert: refused</strong> failed: insert as user B succeeded | 100%" in html
    assert "scorer exited 3 without a report" in text
    assert "<summary>evidence: forged, insert: refused</summary>" in text
    assert "````\nstate: ```row 17```" in text  # the fence outgrows the evidence's backticks
    assert "\x1b" not in text and "\x00" not in text and "red\\x1b[0m\\x00nul" in text  # colours, NUL spelled
    assert "### Baseline regressions (`baselines/t2.toml`)" in text
    assert 'check "gone check" vanished' in html.replace("&quot;", '"')
    assert "<strong>needs-key</strong>: skipped: env OPENAI_API_KEY is not set" in html
    assert "Not compared with the baseline:\n- needs-key was skipped (env OPENAI\\_API\\_KEY is not set)\n" in text
    assert "- spent was stopped by the model budget (model budget of 100 calls exhausted)" in text
    assert "### Stale baseline (`baselines/t2.toml`)" in text
    assert "Record these with `evalrun baseline --update t2` and commit `baselines/t2.toml`." in text


def test_markdown_passing_run_is_short() -> None:
    results = _results(evals=[_results().evals[0]], baseline=None, exit_code=0)

    text = render_markdown(results)

    assert text.startswith("## ✅ evalrun t2: passed (exit 0)\n")
    for section in ("Failures", "Baseline regressions", "Not checked", "Stale baseline"):
        assert section not in text


@pytest.mark.parametrize(
    ("code", "verdict"),
    [(2, "usage or configuration error (exit 2)"), (3, "baseline regressed (exit 3)"),
     (4, "not everything was checked (exit 4)"), (5, "nothing was selected to run (exit 5)"),
     (130, "interrupted; partial results (exit 130)"), (None, "unfinished (no exit code)")],
)
def test_markdown_names_every_exit_code(code: int | None, verdict: str) -> None:
    assert verdict in render_markdown(_results(exit_code=code)).splitlines()[0]


def test_markdown_stays_under_the_step_summary_limit() -> None:
    many = [CheckResult(name=f"check {i}", assertions=1, passed=False, message="m" * 300, evidence="e" * 5000)
            for i in range(5000)]
    evals = [_eval(f"big{j}", Status.FAILED, checks=many) for j in range(20)]

    text = render_markdown(_results(evals=evals))

    assert len(text.encode("utf-8")) < 1024 * 1024
    assert "... and 4950 more failed checks" in text


def test_write_markdown(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"

    write_markdown(_results(), path)

    assert path.read_text(encoding="utf-8") == render_markdown(_results())


def test_step_summary_appends_only_when_set(tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")

    assert append_github_step_summary(_results(), {}) is None
    assert append_github_step_summary(_results(), {"GITHUB_STEP_SUMMARY": str(summary)}) == summary
    append_github_step_summary(_results(), {"GITHUB_STEP_SUMMARY": str(summary)})

    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n## ❌ evalrun t2")
    assert text.count("## ❌ evalrun t2") == 2


def test_step_summary_unwritable_is_one_line_report_error(tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "summary.md"
    with pytest.raises(ReportError, match=r"^\$GITHUB_STEP_SUMMARY .*summary\.md: cannot append the summary \("):
        append_github_step_summary(_results(), {"GITHUB_STEP_SUMMARY": str(target)})


# --- GitHub annotations -----------------------------------------------------


def test_annotations_errors_then_warnings() -> None:
    lines = github_annotations(_results())

    levels = [line.split(" ", 1)[0] for line in lines]
    assert levels == ["::error"] * 7 + ["::warning"] * 3
    assert lines[1] == "::error file=evals/crash,title=evalrun crash::scorer exited 3 without a report"
    assert lines[-3] == (
        "::warning file=evals/needs-key,title=evalrun needs-key::"
        "skipped: env OPENAI_API_KEY is not set (not checked: a skip is never a pass)"
    )


def test_annotations_escape_per_workflow_command_rules() -> None:
    lines = github_annotations(_results())

    pipes = lines[0]
    assert pipes.startswith("::error file=evals/pipes | <b>,title=evalrun pipes | <b>::1 of 2 checks failed%0A")
    assert "forged, insert: refused: insert as user B%0Asucceeded | 100%25 <script>" in pipes
    assert "\n" not in "".join(lines) and "\r" not in "".join(lines)
    # The scorer's text is neutralised first (CRLF is one line break, a lone CR is shown as \r), then escaped.
    odd = _results(evals=[_eval("a:b,c", Status.FAILED, message="50% done\r\nnext\rover")], baseline=None)
    assert github_annotations(odd) == ["::error file=evals/a%3Ab%2Cc,title=evalrun a%3Ab%2Cc::50%25 done%0Anext\\rover"]


def test_annotations_regressions_and_stale_baseline() -> None:
    lines = github_annotations(_results())

    assert '::error file=evals/rls,title=evalrun rls::baseline regression: check "gone check" vanished' in lines[4]
    vanished_eval = lines[6]
    assert vanished_eval.startswith("::error file=baselines/t2.toml,title=evalrun removed-eval::baseline regression")
    assert lines[-1] == (
        "::warning file=baselines/t2.toml,title=evalrun baseline is stale::1 change not in the baseline yet "
        '(first: new check "owner enforced" (2 assertions)); run `evalrun baseline --update t2` '
        "and commit baselines/t2.toml"
    )


def test_annotations_for_a_clean_run_are_empty() -> None:
    assert github_annotations(_results(evals=[_results().evals[0]], baseline=None, exit_code=0)) == []


def test_junit_validates_against_the_published_junit_10_schema(tmp_path: Path) -> None:
    schema = published_junit_schema()
    root = _junit(tmp_path)
    counted = [tc for tc in root.iter("testcase") if "assertions" in tc.attrib]
    assert counted, "checks carry their assertion counts"
    for tc in counted:  # our one documented extension, which JUnit readers ignore
        del tc.attrib["assertions"]
    schema.validate(ET.tostring(root, encoding="unicode"))


def test_published_schema_check_can_fail(tmp_path: Path) -> None:
    schema = published_junit_schema()
    root = _junit(tmp_path)
    next(root.iter("testcase")).append(ET.Element("verdict"))
    with pytest.raises(Exception, match="verdict"):
        schema.validate(ET.tostring(root, encoding="unicode"))


def test_markdown_failure_section_says_each_thing_once_through_the_cli(project) -> None:
    from harness import eval_entry, json_scorer

    def checks(second_passes: bool) -> list[dict[str, object]]:
        return [{"name": "x", "assertions": 2, "passed": True},
                {"name": "y", "assertions": 1, "passed": second_passes, "message": "expected 1, got 2"},
                {"name": "z", "assertions": 1, "passed": second_passes}]

    proj = project({"manifest.toml": eval_entry("c"), "evals/c/score.py": json_scorer(checks(True))})
    assert proj.run("baseline", "--update", "t1").code == 0
    (proj.root / "evals/c/score.py").write_text(json_scorer(checks(False)[1:], exit_code=1))
    r = proj.run("t1", "--markdown", "summary.md")
    assert r.code == 1, r.output
    text = (proj.root / "summary.md").read_text()
    failures = text.split("### Failures\n\n")[1].split("\n\n###")[0]
    assert failures == (
        "#### c (failed, in evals/c)\n\n"
        "- exited 1\n"
        "- check **y** failed: expected 1, got 2\n"
        "- check **z** failed"
    ), failures
    assert "- **c**: check \"x\" vanished (baseline: 2 assertions)" in text  # not "**c**: c: check ..."
    (proj.root / "evals/c/score.py").write_text(json_scorer(checks(False)))  # exit 0: nothing to add
    assert proj.run("t1", "--markdown", "summary.md").code == 1
    failures = (proj.root / "summary.md").read_text().split("### Failures\n\n")[1].split("\n\n###")[0]
    assert failures.splitlines()[2:] == ["- check **y** failed: expected 1, got 2", "- check **z** failed"]


def _with_skips() -> RunResults:
    py = _eval(
        "py",
        Status.PASSED,
        message="skipped in JUnit: t.test_gpu (no gpu); t.test_db",
        checks=[CheckResult(name="t.test_adds", assertions=1, passed=True),
                CheckResult(name="t.test_bug", assertions=1, passed=True, message="xfail bug 12: fails as expected")],
        skipped_tests=[SkippedTest(name="t.test_gpu", reason="no gpu"), SkippedTest(name="t.test_db")],
    )
    return _results(evals=[py], baseline=None)


def test_junit_keeps_the_scorers_skipped_tests_and_expected_failure_notes(tmp_path: Path) -> None:
    """pytest skipped 2 and xfailed 1: the JUnit evalrun writes says so, not skipped="0"."""
    suite = _junit(tmp_path, _with_skips()).find("testsuite[@name='py']")
    assert suite is not None
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("4", "2", "0")
    skipped = {c.get("name"): c.find("skipped").get("message") for c in suite.iter("testcase") if c.find("skipped") is not None}
    assert skipped == {"t.test_gpu": "no gpu", "t.test_db": "skipped in the scorer's report"}
    note = suite.find("testcase[@name='t.test_bug']/system-out")
    assert note is not None and note.text == "xfail bug 12: fails as expected"
    _check_junit_10(suite)


def test_junit_with_skipped_tests_validates_against_the_published_junit_10_schema(tmp_path: Path) -> None:
    schema = published_junit_schema()
    root = _junit(tmp_path, _with_skips())
    for tc in root.iter("testcase"):
        tc.attrib.pop("assertions", None)
    schema.validate(ET.tostring(root, encoding="unicode"))


def test_closing_line_counts_the_tests_skipped_inside_evals() -> None:
    from evalrun.reports_out.terminal import closing_line

    assert closing_line(_with_skips().evals) == "1 passed, 0 failed, 0 skipped (2 tests skipped inside evals)"


# --- the network: whether the run was isolated, in every output ------------------------------------

NOT_ISOLATED = NetworkIsolation(isolated=False, reason="uid 1001 cannot create a network namespace: unshare: "
                                "Operation not permitted; and no fallback: prctl(PR_SET_SECCOMP): Operation not permitted")
FALLBACK = NetworkIsolation(isolated=True, mechanism="seccomp+landlock")


def test_a_run_not_isolated_says_so_in_junit_markdown_the_step_summary_and_a_warning(tmp_path: Path) -> None:
    results = _results(network=NOT_ISOLATED)
    line = f"network: not isolated: {NOT_ISOLATED.reason}"
    root = _junit(tmp_path, results)
    _check_junit_10(root)  # a property more: still the schema's shape
    suites = [s for s in root.iter("testsuite") if s.get("name") != "evalrun baseline"]  # one per eval
    assert len(suites) == 7
    for suite in suites:
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["network"] == line.removeprefix("network: "), suite.get("name")
    shown = f"<p>⚠️ <strong>{line}</strong></p>"  # as GitHub renders it: the markup escaped, the words intact
    assert shown in _html(render_markdown(results))
    summary = tmp_path / "summary.md"
    append_github_step_summary(results, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert shown in _html(summary.read_text(encoding="utf-8"))
    warning = [w for w in github_annotations(results) if "not isolated" in w]
    assert warning == [f"::warning file=manifest.toml,title=evalrun t2 not isolated from the network::{line}"]


def test_an_isolated_run_names_its_mechanism_and_warns_of_nothing(tmp_path: Path) -> None:
    results = _results(network=FALLBACK)
    line = "network: isolated (seccomp+landlock), except unix sockets bound to a path"
    props = {p.get("name"): p.get("value") for p in _junit(tmp_path, results).iter("property")}
    assert props["network"] == line.removeprefix("network: ")
    assert f"<p>{line}</p>" in _html(render_markdown(results))
    assert not [w for w in github_annotations(results) if "network" in w]
    # t3 (never isolated, no record): no line, no property, no warning
    t3 = _results(network=None)
    assert "network" not in render_markdown(t3) and "network" not in {p.get("name") for p in _junit(tmp_path, t3).iter("property")}
