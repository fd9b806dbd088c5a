"""format = "pytest-reportlog": pytest's --report-log, written by the real plugin, read into checks that count subtests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalrun.errors import ReportError
from evalrun.reports_in.reportlog import parse_reportlog
from harness import an_eval, manifest
from harness.manifest_builder import EvalBlock

pytest.importorskip("pytest_reportlog", reason="pip install -e '.[dev]' installs pytest-reportlog")

SAMPLE = """
import os
import pytest

def test_adds():
    assert 1 + 1 == 2

def test_subtests(subtests):
    for i in range(int(os.environ.get("SUBTESTS", "3"))):
        with subtests.test(msg="case", i=i):
            assert i != int(os.environ.get("BAD_SUBTEST", "-1"))

@pytest.mark.skip(reason="no gpu")
def test_skipped():
    pass

@pytest.mark.xfail(reason="bug 12")
def test_known_bug():
    assert 1 == 2

@pytest.fixture
def broken():
    yield
    if os.environ.get("TEARDOWN"):
        raise RuntimeError("teardown broke")

def test_teardown(broken):
    pass
"""


def _pytest_log(folder: Path, env: dict[str, str] | None = None, *args: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    full |= {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_reportlog",
         "--rootdir", str(folder), "--report-log=log.jsonl", *args, "test_sample.py"],
        cwd=folder, env=full, capture_output=True, text=True, timeout=120, check=False,
    )


def test_real_report_log_counts_subtests_and_keeps_what_junit_loses(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    proc = _pytest_log(tmp_path, {"BAD_SUBTEST": "1", "TEARDOWN": "1"})
    assert proc.returncode == 1, proc.stdout + proc.stderr

    report = parse_reportlog(tmp_path / "log.jsonl")

    assert report.problem is None
    assert [(c.name, c.assertions, c.passed) for c in report.checks] == [
        ("test_sample.py::test_adds", 1, True),
        ("test_sample.py::test_subtests", 3, False),  # 3 subtests: 3 assertions (JUnit shows one testcase)
        ("test_sample.py::test_known_bug", 1, True),
        ("test_sample.py::test_teardown", 1, False),
    ]
    checks = {c.name: c for c in report.checks}
    assert checks["test_sample.py::test_subtests"].message == "subtest case (i=1): AssertionError: assert 1 != 1"
    assert checks["test_sample.py::test_known_bug"].message == "xfail bug 12: fails as expected"
    assert checks["test_sample.py::test_teardown"].message == "error: failed on teardown: RuntimeError: teardown broke"
    assert report.skipped == ["test_sample.py::test_skipped (no gpu)"]


def test_collection_error_and_unfinished_log_fail_the_eval(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text("import no_such_module_for_evalrun\n")
    _pytest_log(tmp_path)
    assert parse_reportlog(tmp_path / "log.jsonl").problem == (
        "collecting test_sample.py failed: ModuleNotFoundError: No module named 'no_such_module_for_evalrun'"
    )
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    _pytest_log(tmp_path)
    cut = tmp_path / "cut.jsonl"  # pytest killed before it finished: its last line never written
    cut.write_text("\n".join((tmp_path / "log.jsonl").read_text().splitlines()[:-1]))
    assert parse_reportlog(cut).problem == "the report log has no SessionFinish: pytest did not finish the run"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("{not json\n", r"^report log r\.jsonl: line 1: not JSON; point reportlog = at the file pytest --report-log writes$"),
        ('{"$report_type": "SessionStart"}\n[1]\n', r"^report log r\.jsonl: line 2: not a JSON object"),
    ],
)
def test_unusable_log_is_one_line(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "r.jsonl").write_text(content)
    with pytest.raises(ReportError, match=expected):
        parse_reportlog(tmp_path / "r.jsonl")


def test_missing_log_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"^report log out/log\.jsonl: no such file; pytest did not write it"):
        parse_reportlog(tmp_path / "log.jsonl", label="out/log.jsonl")


def _entry(name: str, *extra: str, **env: str) -> EvalBlock:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_reportlog",
            "--report-log=out/log.jsonl", *extra, "tests"]
    return an_eval(name, argv, dir="e", format="pytest-reportlog", reportlog="out/log.jsonl",
                   env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **env})


def _scenarios(**ok_env: str) -> str:
    """ok, failing (subtest 2 fails) and skipped (only the skipped tests); ``ok_env`` more env of ok."""
    return manifest(_entry("ok", **ok_env), _entry("failing", BAD_SUBTEST="2"), _entry("skipped", "-k", "skipped")).text


def test_reportlog_scenarios_through_the_cli(project) -> None:
    """Counts equal pytest's own; a failing subtest 1; a removed subtest 3 (asserts less); all skipped 4; a crash 1."""
    proj = project(
        {
            "manifest.toml": _scenarios(),
            "e/tests/test_sample.py": SAMPLE,
            "e/out/.keep": "",
        }
    )
    r = proj.run("baseline", "--update", "t1", "-e", "ok")
    assert r.code == 0, r.output
    assert '"tests/test_sample.py::test_subtests" = 3' in (proj.root / "baselines/t1.toml").read_text()
    res = proj.eval_result("ok")
    assert (len(res["checks"]), len(res["skipped_tests"])) == (4, 1)  # pytest: 3 passed, 1 skipped, 1 xfailed

    r = proj.run("t1", "-e", "failing")
    assert r.code == 1, r.output
    assert proj.eval_result("failing")["message"].startswith(
        'check "tests/test_sample.py::test_subtests" failed: subtest case (i=2): AssertionError: assert 2 != 2')

    (proj.root / "manifest.toml").write_text(_scenarios(SUBTESTS="2"))
    r = proj.run("t1", "-e", "ok")  # one subtest removed: the check asserts less
    assert r.code == 3, r.output
    assert 'regression: ok: check "tests/test_sample.py::test_subtests" asserts 2 (baseline: 3)' in r.out, r.out

    r = proj.run("t1", "-e", "skipped")
    assert r.code == 4, r.output
    assert proj.eval_result("skipped")["message"] == (
        "everything skipped in the report log: tests/test_sample.py::test_skipped (no gpu)")

    (proj.root / "e/tests/test_sample.py").write_text("import no_such_module_for_evalrun\n")
    r = proj.run("t1", "-e", "ok")
    assert r.code == 1, r.output
    assert "No module named 'no_such_module_for_evalrun'" in proj.eval_result("ok")["message"]
