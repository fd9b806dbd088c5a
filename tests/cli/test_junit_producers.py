"""JUnit from the real producers, gated end to end: pytest, pytest-xdist, node --test, vitest, jest + jest-junit.

Each tool runs for real under evalrun, as docs/recipes-junit.md sets it up. In
each scenario: the counts equal the tool's own, a failing case exits 1, a
removed case or file 3, every test skipped 4, a crash or a bad config 1 with
the tool's real error line. vitest, jest and jest-junit come from npm: .ci/run
installs them into the folder ``EVALRUN_NPM_TOOLS`` names (it holds their
``node_modules``); without them these tests skip, loudly, and fail in CI. Each
test builds its project once and runs each tool the fewest times it can.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalrun.reports_in.assertion_counts import setup_file_path
from harness import an_eval, manifest

NPM_TOOLS = ("vitest", "jest", "jest-junit")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(scope="module")
def npm_modules() -> Path:
    """The node_modules folder that holds vitest, jest and jest-junit (EVALRUN_NPM_TOOLS/node_modules)."""
    folder = os.environ.get("EVALRUN_NPM_TOOLS")
    modules = Path(folder) / "node_modules" if folder else None
    missing = [t for t in NPM_TOOLS if modules is None or not (modules / t / "package.json").is_file()]
    if missing or shutil.which("node") is None:
        what = ", ".join(missing) if missing else "node"
        reason = (f"{what} missing: npm install --prefix DIR {' '.join(NPM_TOOLS)} and set EVALRUN_NPM_TOOLS=DIR "
                  f"(.ci/run does)")
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    assert modules is not None
    return modules


def _manifest(*evals: tuple[str, str, list[str], dict[str, str]]) -> str:
    """JUnit evals (writing out.xml) of (name, dir, run argv, env)."""
    return manifest(*(
        an_eval(name, argv, dir=folder, format="junit", junit="out.xml", timeout=120, **({"env": env} if env else {}))
        for name, folder, argv, env in evals
    )).text


def _junit(proj, folder: str) -> ET.Element:
    return ET.parse(proj.root / folder / "out.xml").getroot()


def _names(proj, name: str) -> list[str]:
    return [c["name"] for c in proj.eval_result(name)["checks"]]


def _take_baseline(proj) -> None:
    r = proj.run("baseline", "--update", "t1", "--from-results", ".evalrun/results/t1.json")
    assert r.code == 0, r.output


def _scenarios(proj, ok: str, *, removed: Path, failing: str, skipped: str, crash: str, crash_line: str,
               vanished: str, colour_asked: bool = False) -> None:
    """The scenarios after a passing baseline of ``ok``: each eval alone, so each exit code is its own."""
    r = proj.run("t1", "-e", failing)
    assert r.code == 1, r.output
    res = proj.eval_result(failing)
    if colour_asked:  # the eval's env says FORCE_COLOR: evalrun leaves colours to it
        assert "\x1b[" in res["output_tail"], res["output_tail"]
    assert res["status"] == "failed" and res["message"].startswith('check "'), res["message"]

    r = proj.run("t1", "-e", skipped)
    assert r.code == 4, r.output
    res = proj.eval_result(skipped)
    assert res["status"] == "skipped" and res["message"].startswith("everything skipped in JUnit: "), res["message"]

    r = proj.run("t1", "-e", crash)
    assert r.code == 1, r.output
    assert crash_line in proj.eval_result(crash)["message"], proj.eval_result(crash)["message"]

    removed.unlink()
    r = proj.run("t1", "-e", ok)
    assert r.code == 3, r.output
    assert f'{ok}: check "{vanished}" vanished' in r.out, r.out


# --- pytest and pytest-xdist -----------------------------------------------------------------

PY_A = """
import os
import pytest

def test_adds():
    assert 1 + 1 == (3 if os.environ.get("BREAK") else 2)

@pytest.mark.skip(reason="no gpu")
def test_skipme_gpu():
    pass

@pytest.mark.xfail(reason="bug 12")
def test_known_bug():
    assert 1 == 2
"""
PY_B = """
import pytest

def test_subtracts():
    assert 2 - 1 == 1

@pytest.mark.skip(reason="no network")
def test_skipme_net():
    pass

@pytest.mark.skip(reason="no db")
def test_skipme_db():
    pass
"""


def _pytest_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--junitxml=out.xml", "tests"]


NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@pytest.mark.parametrize("xdist", [False, True], ids=["pytest", "pytest-xdist"])
def test_pytest_scenarios(project, xdist: bool) -> None:
    workers = ("-p", "xdist", "-n", "2") if xdist else ()
    proj = project(
        {
            "manifest.toml": _manifest(
                ("ok", "e", _pytest_argv(*workers), NO_PLUGINS),
                ("failing", "e", _pytest_argv(*workers), {**NO_PLUGINS, "BREAK": "1"}),
                ("skipped", "e", _pytest_argv(*workers, "-k", "skipme"), NO_PLUGINS),  # -k picks only skipped tests
                ("crash", "crash", _pytest_argv(*workers), NO_PLUGINS),
            ),
            "e/tests/test_a.py": PY_A,
            "e/tests/test_b.py": PY_B,
            "crash/tests/conftest.py": "import no_such_module_for_evalrun\n",
            "crash/tests/test_c.py": "def test_c():\n    pass\n",
        }
    )
    r = proj.run("t1", "-e", "ok", "--junit", "ci.xml")
    assert r.code == 0, r.output
    _take_baseline(proj)
    suite = _junit(proj, "e").find("testsuite")
    assert suite is not None
    own_passed = int(suite.get("tests")) - int(suite.get("skipped")) - int(suite.get("failures")) - int(suite.get("errors"))
    res = proj.eval_result("ok")
    # pytest counts the xfail as skipped; evalrun as a passing check with its note
    assert len(res["checks"]) == own_passed + 1 == 3
    assert sorted(_names(proj, "ok")) == ["tests.test_a.test_adds", "tests.test_a.test_known_bug",
                                          "tests.test_b.test_subtracts"]
    assert sorted(t["reason"] for t in res["skipped_tests"]) == ["no db", "no gpu", "no network"]
    assert len(res["skipped_tests"]) == int(suite.get("skipped")) - 1  # pytest's skips, less its xfail
    # the run's summary and its own --junit say what pytest skipped
    assert "1 passed, 0 failed, 0 skipped (3 tests skipped inside evals)" in r.out, r.out
    ours = ET.parse(proj.root / "ci.xml").getroot().find("testsuite[@name='ok']")
    assert ours is not None and ours.get("skipped") == "3"
    assert {c.get("name"): c.find("skipped").get("message") for c in ours.iter("testcase")
            if c.find("skipped") is not None} == {
        "tests.test_a.test_skipme_gpu": "no gpu",
        "tests.test_b.test_skipme_net": "no network",
        "tests.test_b.test_skipme_db": "no db",
    }
    xfail = ours.find("testcase[@name='tests.test_a.test_known_bug']/system-out")
    assert xfail is not None and xfail.text == "xfail bug 12: fails as expected"

    _scenarios(proj, "ok", removed=proj.root / "e/tests/test_b.py", failing="failing", skipped="skipped",
               crash="crash", crash_line="ModuleNotFoundError: No module named 'no_such_module_for_evalrun'",
               vanished="tests.test_b.test_subtracts")


# --- node --test ------------------------------------------------------------------------------

NODE_ARGV = ["node", "--test", "--test-reporter=junit", "--test-reporter-destination=out.xml",
             "--test-reporter=spec", "--test-reporter-destination=stdout"]
NODE_FILE = """
import {{ describe, it }} from 'node:test';
import assert from 'node:assert/strict';
const group = process.env.SKIP_ALL ? describe.skip : describe;
// node's JUnit names no file: one top-level describe per file, named after it, keeps two files apart
group('{file}', () => {{
  describe('math', () => {{
    it('adds', () => assert.equal(1 + 1, process.env.BREAK ? 3 : 2));
{more}
  }});
}});
"""
NODE_A_MORE = """    it('multiplies', () => assert.equal(2 * 3, 6));
    it.todo('divides');
    it.skip('needs a gpu', () => {});
    it('known bug', { todo: 'bug 7' }, () => assert.equal(1, 2));"""
NODE_SAME = """
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
describe('math', () => {
  it('adds', () => assert.equal(1 + 1, 2));
});
"""


@needs_node
def test_node_test_runner_scenarios(project) -> None:
    proj = project(
        {
            "manifest.toml": _manifest(
                ("ok", "e", NODE_ARGV, {}),
                ("failing", "e", NODE_ARGV, {"BREAK": "1"}),
                ("skipped", "e", NODE_ARGV, {"SKIP_ALL": "1"}),
                ("crash", "crash", NODE_ARGV, {}),
                ("same", "same", NODE_ARGV, {}),
            ),
            "e/tests/a.test.mjs": NODE_FILE.format(file="a.test.mjs", more=NODE_A_MORE),
            "e/tests/b.test.mjs": NODE_FILE.format(file="b.test.mjs", more="    it('subtracts', () => assert.equal(2 - 1, 1));"),
            "crash/tests/c.test.mjs": "import { test } from 'node:test';\ntest('x', () => { [1, 2; });\n",
            "same/tests/a.test.mjs": NODE_SAME,
            "same/tests/b.test.mjs": NODE_SAME,
        }
    )
    r = proj.run("t1", "-e", "ok")
    assert r.code == 0, r.output
    own = {k: int(v) for k, v in re.findall(r"<!-- (\w+) (\d+) -->", (proj.root / "e/out.xml").read_text())}
    res = proj.eval_result("ok")
    assert sorted(_names(proj, "ok")) == [
        "a.test.mjs > math > adds", "a.test.mjs > math > known bug", "a.test.mjs > math > multiplies",
        "b.test.mjs > math > adds", "b.test.mjs > math > subtracts",
    ]
    # node counts 4 passes and 2 todos: the todo that fails as expected is a passing check, the empty one is not
    assert len(res["checks"]) == own["pass"] + 1 and own["todo"] == 2
    assert sorted(str(t["name"]) for t in res["skipped_tests"]) == ["a.test.mjs > math > divides",
                                                                      "a.test.mjs > math > needs a gpu"]
    assert len(res["skipped_tests"]) == own["skipped"] + own["todo"] - 1
    _take_baseline(proj)

    r = proj.run("t1", "-e", "same")  # two files, the same describe and it names, no file in node's JUnit
    assert r.code == 1, r.output
    message = proj.eval_result("same")["message"]
    assert "testcase 'math > adds' at line " in message and "which evalrun will not merge into one check" in message

    _scenarios(proj, "ok", removed=proj.root / "e/tests/b.test.mjs", failing="failing", skipped="skipped",
               crash="crash", crash_line="SyntaxError: Unexpected token ';'", vanished="b.test.mjs > math > subtracts")


# --- vitest and jest + jest-junit (npm) --------------------------------------------------------

def _link_tools(folder: Path, modules: Path, *names: str) -> None:
    """A node_modules of the eval's own that links the shared tools: their caches stay in this project."""
    own = folder / "node_modules"
    own.mkdir(parents=True, exist_ok=True)
    for name in names:
        (own / name).symlink_to(modules / name, target_is_directory=True)


JS_FILE = """
{imports}const group = process.env.SKIP_ALL ? describe.skip : describe;
group('math', () => {{
  it('adds', () => {{ expect(1 + 1).toBe(process.env.BREAK ? 3 : 2); }});
{more}
}});
"""
JS_A_MORE = """  it('multiplies', () => { expect(2 * 3).toBe(6); expect(3 * 2).toBe(6); });
  it.todo('divides');
  it.skip('needs a gpu', () => {});"""
JS_B_MORE = "  it('subtracts', () => { expect(2 - 1).toBe(1); });"
VITEST_ARGV = ["node", "node_modules/vitest/vitest.mjs", "run", "--reporter=junit", "--outputFile=out.xml",
               "--reporter=default"]


def _asserts_less(proj, ok: str, test_file: Path, check: str) -> None:
    """With evalrun's setup file the baselined counts are expect()'s own: removing one expect() is exit 3."""
    assert {c["name"]: c["assertions"] for c in proj.eval_result(ok)["checks"]}[check] == 2
    source = test_file.read_text()
    test_file.write_text(source.replace(" expect(3 * 2).toBe(6);", ""))
    r = proj.run("t1", "-e", ok)
    assert r.code == 3, r.output
    assert {c["name"]: c["assertions"] for c in proj.eval_result(ok)["checks"]}[check] == 1
    assert f'check "{check}" asserts less' in r.out or f'"{check}"' in r.out, r.out
    test_file.write_text(source)


def _suite_passes(root: ET.Element) -> tuple[int, int]:
    """The tool's own (passed, skipped) from its JUnit suites' counts."""
    passed = skipped = 0
    for suite in root.iter("testsuite"):
        n = {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}
        passed += n["tests"] - n["failures"] - n["errors"] - n["skipped"]
        skipped += n["skipped"]
    return passed, skipped


def test_vitest_scenarios(project, npm_modules: Path) -> None:
    imports = "import { describe, it, expect } from 'vitest';\n"
    proj = project(
        {
            "manifest.toml": _manifest(
                ("ok", "e", VITEST_ARGV, {}),
                ("failing", "e", VITEST_ARGV, {"BREAK": "1", "FORCE_COLOR": "1"}),  # asks for colours
                ("skipped", "e", VITEST_ARGV, {"SKIP_ALL": "1"}),
                ("crash", "crash", VITEST_ARGV, {}),
            ),
            "e/package.json": '{"type": "module"}\n',
            "e/evalrun.setup.mjs": setup_file_path("vitest").read_text(),  # as the recipe says: copied in
            "e/vitest.config.ts": "import { defineConfig } from 'vitest/config';\n"
                                  "export default defineConfig({ test: { setupFiles: ['./evalrun.setup.mjs'] } });\n",
            "e/tests/a.test.ts": JS_FILE.format(imports=imports, more=JS_A_MORE),
            "e/tests/b.test.ts": JS_FILE.format(imports=imports, more=JS_B_MORE),  # the same describe/it names
            "crash/package.json": '{"type": "module"}\n',
            "crash/vitest.config.ts": "import { defineConfig } from 'vitest/config';\n"
                                      "export default defineConfig({ test: { include: ['tests/**'] }\n",
            "crash/tests/c.test.ts": JS_FILE.format(imports=imports, more=""),
        }
    )
    _link_tools(proj.root / "e", npm_modules, "vitest")
    _link_tools(proj.root / "crash", npm_modules, "vitest")
    r = proj.run("t1", "-e", "ok", env={"FORCE_COLOR": "1"})  # a CI that forces colours
    assert r.code == 0, r.output
    passed, skipped = _suite_passes(_junit(proj, "e"))
    res = proj.eval_result("ok")
    # scorers run with NO_COLOR=1 FORCE_COLOR=0: vitest's own summary, without a colour code
    assert "Tests  4 passed | 1 skipped" in res["output_tail"] and "\x1b" not in res["output_tail"], res["output_tail"]
    # vitest names each suite after its file: the same names in two files stay two checks
    assert sorted(_names(proj, "ok")) == [
        "tests/a.test.ts.math > adds", "tests/a.test.ts.math > multiplies",
        "tests/b.test.ts.math > adds", "tests/b.test.ts.math > subtracts",
    ]
    assert (len(res["checks"]), len(res["skipped_tests"])) == (passed, skipped) == (4, 2)  # its todo is a skip
    assert "no assertion count" not in res["message"], res["message"]  # every test that ran has its count
    _take_baseline(proj)
    _asserts_less(proj, "ok", proj.root / "e/tests/a.test.ts", "tests/a.test.ts.math > multiplies")

    _scenarios(proj, "ok", removed=proj.root / "e/tests/b.test.ts", failing="failing", skipped="skipped",
               crash="crash", crash_line="[PARSE_ERROR] Expected `}` but found `EOF`",
               vanished="tests/b.test.ts.math > subtracts", colour_asked=True)


JEST_CONFIG = """
module.exports = {
  cacheDirectory: '.jest-cache',
  setupFilesAfterEnv: ['<rootDir>/evalrun.setup.cjs'],
  reporters: ['default', ['jest-junit', {
    outputName: 'out.xml', suiteNameTemplate: '{filepath}', classNameTemplate: '{classname}', titleTemplate: '{title}',
    ancestorSeparator: ' > ', addFileAttribute: 'true', reportTestSuiteErrors: 'true',
  }]],
};
"""
JEST_PROPERTIES = "module.exports = (result) => ({ status: result.status });\n"
JEST_ARGV = ["node", "node_modules/jest/bin/jest.js", "--ci"]
JEST_DEFAULTS_ARGV = [*JEST_ARGV, "--cacheDirectory=.jest-cache", "--reporters=default", "--reporters=jest-junit"]
JEST_DEFAULTS_ENV = {"JEST_JUNIT_OUTPUT_NAME": "out.xml"}


def test_jest_junit_scenarios(project, npm_modules: Path) -> None:
    proj = project(
        {
            "manifest.toml": _manifest(
                ("ok", "e", JEST_ARGV, {}),
                ("failing", "e", JEST_ARGV, {"BREAK": "1"}),
                ("skipped", "e", JEST_ARGV, {"SKIP_ALL": "1"}),
                ("crash", "crash", JEST_ARGV, {}),
                ("defaults", "plain", JEST_DEFAULTS_ARGV, JEST_DEFAULTS_ENV),
                ("defaults-one-file", "plain", [*JEST_ARGV, "tests/a.test.js", *JEST_DEFAULTS_ARGV[len(JEST_ARGV):]],
                 JEST_DEFAULTS_ENV),  # before --reporters, which would take it for a reporter
            ),
            "e/jest.config.js": JEST_CONFIG,
            "e/junitTestCaseProperties.js": JEST_PROPERTIES,
            "e/evalrun.setup.cjs": setup_file_path("jest").read_text(),
            "e/tests/a.test.js": JS_FILE.format(imports="", more=JS_A_MORE),
            "e/tests/b.test.js": JS_FILE.format(imports="", more=JS_B_MORE),  # the same describe/it names
            "crash/jest.config.js": JEST_CONFIG.rsplit("};", 1)[0],  # cut short: a SyntaxError
            "crash/tests/c.test.js": JS_FILE.format(imports="", more=""),
            "plain/package.json": "{}\n",
            "plain/tests/a.test.js": JS_FILE.format(imports="", more=JS_A_MORE),
            "plain/tests/b.test.js": JS_FILE.format(imports="", more=JS_B_MORE),
        }
    )
    for folder in ("e", "crash", "plain"):
        _link_tools(proj.root / folder, npm_modules, "jest", "jest-junit")
    r = proj.run("t1", "-e", "ok")
    assert r.code == 0, r.output
    passed, skipped = _suite_passes(_junit(proj, "e"))  # jest-junit leaves todos out of a suite's tests count
    res = proj.eval_result("ok")
    assert sorted(_names(proj, "ok")) == [
        "tests/a.test.js > math.adds", "tests/a.test.js > math.multiplies",
        "tests/b.test.js > math.adds", "tests/b.test.js > math.subtracts",
    ]
    assert (len(res["checks"]), len(res["skipped_tests"])) == (passed, skipped + 1) == (4, 2)
    assert sorted(str(t["name"]) for t in res["skipped_tests"]) == ["tests/a.test.js > math.divides",
                                                                      "tests/a.test.js > math.needs a gpu"]
    assert "no assertion count" not in res["message"], res["message"]  # every test that ran has its count
    _take_baseline(proj)
    _asserts_less(proj, "ok", proj.root / "e/tests/a.test.js", "tests/a.test.js > math.multiplies")

    # jest-junit's defaults: suites named after the describe, no file: the two files' "math adds" are refused
    r = proj.run("t1", "-j", "1", "-e", "defaults", "-e", "defaults-one-file")  # one out.xml: one at a time
    assert r.code == 1, r.output
    assert "which evalrun will not merge into one check" in proj.eval_result("defaults")["message"]
    one = proj.eval_result("defaults-one-file")  # its todo is a bare testcase: counted, and said so
    assert one["status"] == "passed" and len(one["checks"]) == 3, (one["message"], one["output_tail"])
    assert "1 is a todo written as passing" in one["message"], one["message"]

    _scenarios(proj, "ok", removed=proj.root / "e/tests/b.test.js", failing="failing", skipped="skipped",
               crash="crash", crash_line="SyntaxError: ", vanished="tests/b.test.js > math.subtracts")
