"""TAP and JUnit scorers, and the CI reports, through the real CLI."""

from __future__ import annotations

import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import PRODUCERS, an_eval, manifest
from harness.manifest_builder import EvalBlock
from harness.stub_projects import stub_project


def node_test(reporter: str, *args: str) -> list[str]:
    return ["node", "--test", f"--test-reporter={reporter}", *args]


def pytest_junit_eval(test_file: str) -> EvalBlock:
    """Real pytest writing JUnit XML; no third-party plugins: a second of CPU, nothing in the XML."""
    return an_eval(
        "py", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=out.xml", test_file],
        dir="e", env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, format="junit", junit="out.xml",
    )


NODE_PASSING = """
import { test } from 'node:test';
import assert from 'node:assert/strict';
test('adds', () => assert.equal(1 + 1, 2));
test('grouped', async (t) => {
  await t.test('one', () => assert.ok(true));
  await t.test('two', () => assert.ok(true));
});
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_tap_scorer_passes_and_fails_by_its_points(project) -> None:
    proj = project(manifest(
        an_eval("node-ok", node_test("tap", "ok.test.mjs"), dir="e", format="tap", files={"ok.test.mjs": NODE_PASSING}),
        an_eval("node-suite", node_test("tap", "suite.test.mjs"), dir="e", format="tap"),
    ).project())
    shutil.copy(PRODUCERS / "node_suite.test.mjs", proj.root / "e" / "suite.test.mjs")
    r = proj.run("t1")
    assert r.code == 1, r.output
    ok = proj.eval_result("node-ok")
    assert ok["status"] == "passed"
    assert [(c["name"], c["assertions"]) for c in ok["checks"]] == [("adds", 1), ("grouped", 2)]
    suite = proj.eval_result("node-suite")
    assert suite["status"] == "failed"  # node exits 1 because a test failed: a failure, not a crash
    assert suite["message"].startswith('check "fails" failed: ')
    assert "(exited 1)" in suite["message"]


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_perl_test_more_bail_out_fails_the_eval(project) -> None:
    proj = project(manifest(an_eval("perl", ["perl", "t.pl"], dir="e", format="tap", env={"BAIL": "1"})).project())
    (proj.root / "e").mkdir()
    shutil.copy(PRODUCERS / "test_more.pl", proj.root / "e" / "t.pl")
    r = proj.run("t1")
    assert r.code == 1
    res = proj.eval_result("perl")
    assert res["status"] == "failed"
    assert "Bail out!" in res["message"] and "db gone" in res["message"]


def test_pytest_junit_scorer(project) -> None:
    proj = project(manifest(pytest_junit_eval("test_x.py")).project(
        {"e/test_x.py": "def test_adds():\n    assert 1 + 1 == 2\n\ndef test_says():\n    assert 'hi'\n"}))
    r = proj.run("t1")
    assert r.code == 0, r.output
    names = [c["name"] for c in proj.eval_result("py")["checks"]]
    assert names == ["test_x.test_adds", "test_x.test_says"]
    # a failing test fails the eval; a stale out.xml from the last run never passes for this one
    (proj.root / "e" / "test_x.py").write_text("def test_adds():\n    assert 1 + 1 == 3\n")
    r = proj.run("t1")
    assert r.code == 1
    assert proj.eval_result("py")["message"].startswith('check "test_x.test_adds" failed')
    (proj.root / "e" / "test_x.py").write_text("import sys\nsys.exit(4)\n")
    r = proj.run("t1")
    assert r.code == 1
    assert proj.eval_result("py")["status"] == "failed"  # the old, passing out.xml was not read


def test_junit_scorer_that_writes_no_file_names_the_path(project) -> None:
    proj = project(manifest(an_eval(
        "py", ["python", "-c", "pass"], dir="e", format="junit", junit="reports/out.xml",
        files={"reports/out.xml": '<testsuite><testcase name="stale"/></testsuite>'},
    )).project())
    r = proj.run("t1")
    assert r.code == 1
    assert "e/reports/out.xml" in proj.eval_result("py")["message"]


def test_junit_markdown_and_github_outputs(project, tmp_path: Path) -> None:
    proj = stub_project(
        project,
        {"good": "pass.py", "bad": "fail_check.py", "skip": ("pass.py", 'requires = ["env:EVALRUN_TEST_ABSENT_KEY"]')},
    )
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    r = proj.run(
        "t1", "--junit", "out/junit.xml", "--markdown", "out/summary.md",
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert r.code == 1
    root = ET.parse(proj.root / "out" / "junit.xml").getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert suites["bad"].find("testcase[@name='refuses forged insert']/failure") is not None
    assert suites["good"].find("testcase[@name='adds up']").get("assertions") == "2"
    assert suites["skip"].find(".//skipped") is not None
    md = (proj.root / "out" / "summary.md").read_text()
    assert "refuses forged insert" in md, md
    assert "EVALRUN\\_TEST\\_ABSENT\\_KEY is not set" in md, md
    assert summary.read_text().startswith("earlier step\n") and "evalrun t1" in summary.read_text()
    assert "::error file=evals/bad,title=evalrun bad::" in r.out
    assert "::warning file=evals/skip" in r.out


def node_junit_eval(**keys) -> EvalBlock:
    return an_eval("node-junit", node_test("junit", "--test-reporter-destination=out.xml", "d.test.mjs"), dir="e",
                   format="junit", junit="out.xml", **keys)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_junit_removed_test_is_reported_vanished_under_its_own_name(project) -> None:
    """Two describes each with it('works'): removing add's reports "add > works", never "sub > works"."""
    proj = project(manifest(node_junit_eval()).project())
    (proj.root / "e").mkdir()
    shutil.copy(PRODUCERS / "node_describe.test.mjs", proj.root / "e" / "d.test.mjs")
    r = proj.run("baseline", "--update", "t1")
    assert r.code == 0, r.output
    baseline = (proj.root / "baselines" / "t1.toml").read_text()
    assert '"add > works" = 1' in baseline and '"sub > works" = 1' in baseline
    assert '"future feature" = 1' in baseline  # an expected failure is a check, as in TAP
    assert "needs a database" not in baseline  # a skip is not

    (proj.root / "manifest.toml").write_text(manifest(node_junit_eval(env={"DROP_ADD": "1"})).text)
    r = proj.run("t1")

    assert r.code == 3, r.output
    assert 'node-junit: check "add > works" vanished' in r.out, r.out
    regressions = proj.results()["baseline"]["regressions"]
    assert [(x["kind"], x["check"]) for x in regressions] == [("vanished-check", "add > works")]


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
def test_perl_failed_point_message_carries_test_more_diagnostics_from_stderr(project) -> None:
    proj = project(manifest(an_eval("perl", ["perl", "t.pl"], dir="e", format="tap")).project())
    (proj.root / "e").mkdir()
    shutil.copy(PRODUCERS / "test_more.pl", proj.root / "e" / "t.pl")

    r = proj.run("t1")

    assert r.code == 1, r.output
    res = proj.eval_result("perl")
    assert res["status"] == "failed"
    failed = next(c for c in res["checks"] if c["name"] == "math is off")
    assert failed["message"] == "at t.pl line 8.; got: '2'; expected: '3'; the adder is broken"
    assert res["message"] == f'check "math is off" failed: {failed["message"]} (exited 1)'
    todo = next(c for c in res["checks"] if c["name"] == "future feature")
    assert (todo["passed"], todo["message"]) == (True, "TODO not yet: fails as expected")


def test_pytest_teardown_error_is_one_failed_check_and_xfail_passes(project) -> None:
    proj = project(manifest(pytest_junit_eval("test_outcomes.py")).project())
    (proj.root / "e").mkdir()
    shutil.copy(PRODUCERS / "pytest_outcomes.py", proj.root / "e" / "test_outcomes.py")

    r = proj.run("t1")

    assert r.code == 1, r.output
    checks = {c["name"]: c for c in proj.eval_result("py")["checks"]}
    assert not any("#" in name for name in checks)  # no phantom "test_... #2"
    both = checks["test_outcomes.test_fails_then_teardown_errors"]
    assert both["passed"] is False and "teardown broke" in both["message"] and "one is not two" in both["message"]
    xfail = checks["test_outcomes.test_expected_failure"]
    assert (xfail["passed"], xfail["message"]) == (True, "xfail bug 12: fails as expected")


def test_sdk_check_that_asserted_nothing_says_so_once(project) -> None:
    proj = project(manifest(an_eval("sdk", dir="e", files={"score.py": """
        from evalrun import scorer
        with scorer.check("looks fine") as c:
            pass
        """})).project())

    r = proj.run("t1")

    assert r.code == 1, r.output
    res = proj.eval_result("sdk")
    assert res["checks"][0]["message"] == "asserted nothing"
    assert res["message"] == 'check "looks fine" failed: asserted nothing'


TSC_ARGV = ["node", "node_modules/typescript/bin/tsc", "-p", "."]


def test_exit_format_with_the_real_tsc(project) -> None:
    """A static check writes no report: its exit code is the verdict, its error lines the message."""
    from harness.eval_tools import npm_package

    typescript = npm_package("typescript")
    proj = project(manifest(an_eval("types", TSC_ARGV, dir="web", format="exit", files={
        "tsconfig.json": '{"compilerOptions": {"strict": true, "noEmit": true}, "include": ["src"]}\n',
        "src/cart.ts": "export const total: number = 1 + 2;\n",
    })).project())
    (proj.root / "web/node_modules").mkdir()
    (proj.root / "web/node_modules/typescript").symlink_to(typescript, target_is_directory=True)
    r = proj.run("t1")
    assert r.code == 0, r.output  # a clean tsc writes nothing: passed, not "exited 0 but no report was written"
    res = proj.eval_result("types")
    assert [(c["name"], c["assertions"], c["passed"]) for c in res["checks"]] == [("types", 1, True)]
    assert proj.run("baseline", "--update", "t1", "--from-results", ".evalrun/results/t1.json").code == 0

    (proj.root / "web/src/cart.ts").write_text('export const total: number = "3";\nexport const n: string = 4;\n')
    r = proj.run("t1")
    assert r.code == 1, r.output
    res = proj.eval_result("types")
    assert res["status"] == "failed" and res["message"] == (
        "check \"types\" failed: src/cart.ts(1,14): error TS2322: Type 'string' is not assignable to type "
        "'number'.; src/cart.ts(2,14): error TS2322: Type 'number' is not assignable to type 'string'. (exited 1)"
    ), res["message"]
    assert "src/cart.ts(1,14): error TS2322" in r.out, r.out


SIDECAR_SCORER = """
import os, pathlib, sys
pathlib.Path("out.xml").write_text(
    '<testsuite name="tests/a.test.ts"><testcase classname="tests/a.test.ts" name="math &gt; adds"/></testsuite>')
folder = pathlib.Path(os.environ["EVALRUN_WORKDIR"]) / "assertion-counts"
folder.mkdir()
(folder / "vitest-1-0.jsonl").write_text(sys.argv[1])
"""


def test_the_assertion_counts_beside_a_junit_report_fill_its_counts_or_fail_that_eval_alone(project) -> None:
    good = '{"v": 1, "runner": "vitest", "file": "/w/tests/a.test.ts", "titles": ["math", "adds"], "assertions": 3}'
    hostile = '{"v": 1, "runner": "vitest"\n\x1b[31m'  # torn, with a colour code
    proj = project(manifest(*(
        an_eval(name, ["python", "score.py", line], dir="e", format="junit", junit="out.xml")
        for name, line in (("counted", good), ("hostile", hostile))
    )).project({"e/score.py": SIDECAR_SCORER}))
    r = proj.run("t1", "-e", "counted")
    assert r.code == 0, r.output
    assert [(c["name"], c["assertions"]) for c in proj.eval_result("counted")["checks"]] == [
        ("tests/a.test.ts.math > adds", 3)]
    r = proj.run("t1", "-e", "hostile")
    assert r.code == 1, r.output
    assert proj.eval_result("hostile")["message"] == (
        "exited 0 but assertion counts $EVALRUN_WORKDIR/assertion-counts/vitest-1-0.jsonl: line 1: not JSON; "
        "copy the setup file again (evalrun setup-file vitest|jest, see docs/recipes-junit.md)")
