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


def _manifest(*evals: tuple[str, str, str, str]) -> str:
    """``[[evals]]`` entries of (name, dir, run argv as TOML, extra lines)."""
    parts = []
    for name, folder, argv, extra in evals:
        parts.append(
            f'[[evals]]\nname = "{name}"\ntier = "t1"\ndir = "{folder}"\nrun = {argv}\n'
            f'format = "junit"\njunit = "out.xml"\ntimeout = 120\n{extra}\n'
        )
    return "\n".join(parts)


def _junit(proj, folder: str) -> ET.Element:
    return ET.parse(proj.root / folder / "out.xml").getroot()


def _names(proj, name: str) -> list[str]:
    return [c["name"] for c in proj.eval_result(name)["checks"]]


def _take_baseline(proj) -> None:
    r = proj.run("baseline", "--update", "t1", "--from-results", ".evalrun/results/t1.json")
    assert r.code == 0, r.output


def _scenarios(proj, ok: str, *, removed: Path, failing: str, skipped: str, crash: str, crash_line: str,
               vanished: str) -> None:
    """The scenarios after a passing baseline of ``ok``: each eval alone, so each exit code is its own."""
    r = proj.run("t1", "-e", failing)
    assert r.code == 1, r.output
    res = proj.eval_result(failing)
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


def _pytest_argv(*extra: str) -> str:
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "--junitxml=out.xml", "tests"]
    return "[" + ", ".join(f'"{a}"' for a in args) + "]"


NO_PLUGINS = 'env = { PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1" }'


@pytest.mark.parametrize("xdist", [False, True], ids=["pytest", "pytest-xdist"])
def test_pytest_scenarios(project, xdist: bool) -> None:
    workers = ("-p", "xdist", "-n", "2") if xdist else ()
    proj = project(
        {
            "manifest.toml": _manifest(
                ("ok", "e", _pytest_argv(*workers), NO_PLUGINS),
                ("failing", "e", _pytest_argv(*workers), 'env = { PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1", BREAK = "1" }'),
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
