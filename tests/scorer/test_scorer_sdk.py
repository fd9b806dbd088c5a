"""Tests for the Python scorer SDK (``evalrun.scorer``).

Behaviour that depends on the process -- the report at exit, exit status,
the by-hand summary, a crash between checks, what the import pulls in -- is
tested by running tiny scorer scripts as real subprocesses. Assertion
semantics are tested in-process on explicit ``Scorer`` objects, which never
act at interpreter exit, so importing the SDK into pytest is harmless.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evalrun.scorer import Check, Scorer, ScorerError


@dataclass(frozen=True)
class ScorerRun:
    returncode: int
    stdout: str
    stderr: str
    report_path: Path | None

    def report(self) -> dict[str, Any]:
        assert self.report_path is not None
        return json.loads(self.report_path.read_text(encoding="utf-8"))

    def checks(self) -> dict[str, dict[str, Any]]:
        return {c["name"]: c for c in self.report()["checks"]}


def _run(tmp_path: Path, source: str, *, under_evalrun: bool = True) -> ScorerRun:
    """Run ``source`` as a scorer script, as evalrun would (or by hand)."""
    script = tmp_path / "score.py"
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_")}
    # Buffered stdout, as under a real pipe: the by-hand exit path must flush it.
    env.pop("PYTHONUNBUFFERED", None)
    report_path = None
    if under_evalrun:
        report_path = tmp_path / "out" / "report.json"
        report_path.parent.mkdir()
        env.update(
            EVALRUN_REPORT=str(report_path),
            EVALRUN_EVAL="sdk-test",
            EVALRUN_TIER="t1",
            EVALRUN_WORKDIR=str(tmp_path),
        )
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30
    )
    return ScorerRun(proc.returncode, proc.stdout, proc.stderr, report_path)


def _scorer(tmp_path: Path) -> Scorer:
    return Scorer(tmp_path / "report.json")


def _failure(check: Check) -> str | None:
    assert not check.passed, "the check was expected to fail"
    return check.message


# -- the report under evalrun ---------------------------------------------------


def test_report_counts_each_assertion_and_records_metrics(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("rows are isolated") as c:
            c.equal(1 + 2, 3)
            c.true([1])
            c.false("")
            c.contains([1, 2], 2)
            c.not_contains("abc", "z")
            c.matches("owner=A", r"owner=[AB]")
            c.less(1, 2)
            c.at_most(2, 2)
            c.greater(3, 2)
            c.at_least(3, 3)
            c.is_none(None)
            c.evidence("state: fine")
        with scorer.check("one more") as c:
            c.true(True)
        scorer.metric("time_to_ready_ms", 1840)
        scorer.metric("model", "m-1")
        scorer.metric("warm", True)
        scorer.metric("ratio", 0.5)
        scorer.metric("ratio", 0.75)  # recorded again: the last value wins
        scorer.metric("nan", float("nan"))
        """,
    )
    assert run.returncode == 0, run.stderr
    assert run.report() == {
        "checks": [
            {"name": "rows are isolated", "assertions": 11, "passed": True, "evidence": "state: fine"},
            {"name": "one more", "assertions": 1, "passed": True},
        ],
        "metrics": {"time_to_ready_ms": 1840, "model": "m-1", "warm": True, "ratio": 0.75, "nan": "nan"},
    }


def test_failed_assertion_ends_its_check_and_later_checks_run(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("forged insert refused") as c:
            c.true(True)
            c.equal(2, 3, "rows visible to B")
            c.true(True)
            print("unreachable")
        with scorer.check("later") as c:
            c.true(True)
        """,
    )
    # Under evalrun a scorer that ran to the end exits 0: the report says what failed.
    assert run.returncode == 0, run.stderr
    assert "unreachable" not in run.stdout
    checks = run.checks()
    assert checks["forged insert refused"] == {
        "name": "forged insert refused",
        "assertions": 2,
        "passed": False,
        "message": "rows visible to B: expected 3, got 2",
    }
    assert checks["later"]["passed"] is True


def test_exception_in_check_fails_only_that_check(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("explodes") as c:
            c.true(True)
            raise ValueError("boom")
        with scorer.check("still runs") as c:
            c.true(True)
        """,
    )
    assert run.returncode == 0, run.stderr
    exploded = run.checks()["explodes"]
    assert (exploded["passed"], exploded["assertions"], exploded["message"]) == (False, 1, "ValueError: boom")
    assert "Traceback" in exploded["evidence"] and 'raise ValueError("boom")' in exploded["evidence"]
    assert run.checks()["still runs"]["passed"] is True


def test_except_exception_in_a_scorer_cannot_swallow_a_failed_assertion(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("careless") as c:
            try:
                c.equal(1, 2)
            except Exception:
                pass
            c.true(True)
        """,
    )
    assert run.checks()["careless"] == {
        "name": "careless",
        "assertions": 1,
        "passed": False,
        "message": "expected 2, got 1",
    }


def test_check_without_assertions_is_reported_failed_with_zero(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("empty"):
            pass
        """,
    )
    assert run.returncode == 0, run.stderr
    assert run.report()["checks"] == [
        {"name": "empty", "assertions": 0, "passed": False, "message": "asserted nothing"}
    ]


def test_duplicate_check_name_crashes_the_scorer(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("same") as c:
            c.true(True)
        with scorer.check("same") as c:
            c.true(True)
        """,
    )
    assert run.returncode == 1
    assert "ScorerError: duplicate check name 'same'" in run.stderr
    assert [c["name"] for c in run.report()["checks"]] == ["same"]


def test_uncaught_exception_outside_checks_exits_nonzero_and_keeps_the_report(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("ran") as c:
            c.true(True)
        scorer.metric("seen", 1)
        raise RuntimeError("setup for the next check failed")
        """,
    )
    assert run.returncode == 1
    assert "setup for the next check failed" in run.stderr
    assert run.report() == {"checks": [{"name": "ran", "assertions": 1, "passed": True}], "metrics": {"seen": 1}}


def test_report_is_on_disk_after_each_check_so_a_killed_scorer_leaves_it(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        import os, signal
        from evalrun import scorer

        with scorer.check("before the kill") as c:
            c.true(True)
        with scorer.check("interrupted"):
            os.kill(os.getpid(), signal.SIGKILL)
        """,
    )
    assert run.returncode == -9
    assert run.report()["checks"] == [{"name": "before the kill", "assertions": 1, "passed": True}]


def test_finish_exits_zero_under_evalrun_even_with_failures(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        with scorer.check("fails") as c:
            c.fail("no")
        scorer.finish()
        print("after finish")
        """,
    )
    assert run.returncode == 0, run.stderr
    assert "after finish" not in run.stdout
    assert run.stdout == ""  # the summary is for humans; under evalrun the report speaks
    assert run.checks()["fails"]["message"] == "no"


def test_report_write_leaves_no_temp_files(tmp_path: Path) -> None:
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        for i in range(5):
            with scorer.check(f"check {i}") as c:
                c.true(True)
            scorer.metric(f"m{i}", i)
        """,
    )
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in run.report_path.parent.iterdir()) == ["report.json"]
    assert len(run.report()["checks"]) == 5


def test_report_is_replaced_not_rewritten_in_place(tmp_path: Path) -> None:
    # A reader holding the old file keeps reading a whole old report: the new
    # one arrives by os.replace, never by truncating and rewriting.
    s = _scorer(tmp_path)
    s.metric("first", 1)
    path = tmp_path / "report.json"
    with path.open(encoding="utf-8") as old:
        s.metric("second", 2)
        assert json.load(old) == {"checks": [], "metrics": {"first": 1}}
    assert json.loads(path.read_text(encoding="utf-8"))["metrics"] == {"first": 1, "second": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_report_that_cannot_be_written_at_exit_makes_the_scorer_exit_1(tmp_path: Path) -> None:
    # A scorer that ran but left no usable report crashed; exiting 0 would
    # hide that behind whatever stale file is there.
    run = _run(
        tmp_path,
        """
        import os, shutil
        from evalrun import scorer

        with scorer.check("ran") as c:
            c.true(True)
        out = os.path.dirname(os.environ["EVALRUN_REPORT"])
        shutil.rmtree(out)
        open(out, "w").close()  # a file where the report's directory was
        """,
    )
    assert run.returncode == 1
    assert "evalrun.scorer: could not finish the report" in run.stderr


def test_explicit_scorer_report_is_not_overwritten_at_exit(tmp_path: Path) -> None:
    # Importing the SDK and using only an explicit Scorer must not let the
    # unused default instance write an empty report over it at exit.
    run = _run(
        tmp_path,
        """
        from evalrun import scorer

        s = scorer.Scorer()
        with s.check("explicit") as c:
            c.true(True)
        raise SystemExit(s.finish())
        """,
    )
    assert run.returncode == 0, run.stderr
    assert [c["name"] for c in run.report()["checks"]] == ["explicit"]


# -- by hand (EVALRUN_REPORT unset) ---------------------------------------------

_MIXED_SCORER = """
from evalrun import scorer

print("scorer output")
with scorer.check("passes") as c:
    c.true(True)
    c.equal(1, 1)
with scorer.check("fails") as c:
    c.evidence("row 17 owner=A")  # before the assertion: a failure ends the block
    c.equal(2, 3)
scorer.metric("time_to_ready_ms", 1840)
"""


@pytest.mark.parametrize("ending", ["", "scorer.finish()\n"], ids=["at-exit", "finish"])
def test_by_hand_prints_a_summary_and_exits_1_on_failure(tmp_path: Path, ending: str) -> None:
    run = _run(tmp_path, _MIXED_SCORER + ending, under_evalrun=False)
    assert run.returncode == 1, run.stderr
    assert run.stdout.splitlines() == [
        "scorer output",
        "PASS  passes  (2 assertions)",
        "FAIL  fails  (1 assertion): expected 3, got 2",
        "      evidence: row 17 owner=A",
        "metrics: time_to_ready_ms=1840",
        "FAILED: 1 of 2 checks failed",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["score.py"]  # nothing written by hand


@pytest.mark.parametrize("ending", ["", "scorer.finish()\n"], ids=["at-exit", "finish"])
def test_by_hand_exits_0_when_every_check_passes(tmp_path: Path, ending: str) -> None:
    source = "from evalrun import scorer\nwith scorer.check('fine') as c:\n    c.true(True)\n" + ending
    run = _run(tmp_path, source, under_evalrun=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["PASS  fine  (1 assertion)", "ok: 1 check passed"]


def test_by_hand_with_no_checks_exits_1(tmp_path: Path) -> None:
    run = _run(tmp_path, "from evalrun import scorer\nscorer.finish()\n", under_evalrun=False)
    assert run.returncode == 1
    assert run.stdout.splitlines() == ["FAILED: no checks ran"]


def test_merely_importing_the_sdk_does_not_change_the_exit(tmp_path: Path) -> None:
    run = _run(tmp_path, "from evalrun import scorer\nprint('hi')\n", under_evalrun=False)
    assert (run.returncode, run.stdout) == (0, "hi\n")


# -- the import -----------------------------------------------------------------


def test_import_pulls_in_only_the_stdlib(tmp_path: Path) -> None:
    code = textwrap.dedent(
        """
        import json, sys
        before = set(sys.modules)
        from evalrun import scorer
        print(json.dumps(sorted(set(sys.modules) - before)))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    new = json.loads(proc.stdout)
    assert "evalrun.scorer" in new or "evalrun" in new
    third_party = [m for m in new if m.split(".")[0] not in sys.stdlib_module_names | {"evalrun"}]
    assert third_party == []
    assert [m for m in new if m.startswith("evalrun.")] == ["evalrun.scorer"]
    # Slow stdlib imports the SDK defers or avoids, to stay cheap for every scorer.
    assert {"typing", "tempfile", "traceback", "inspect", "dataclasses"}.isdisjoint(new)


# -- assertions, in process -----------------------------------------------------


def test_raises_context_manager_form(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with s.check("refused") as c:
        with c.raises(PermissionError, match="denied for B") as caught:
            raise PermissionError("insert denied for B")
        c.equal(str(caught.value), "insert denied for B")
    assert (c.passed, c.assertions) == (True, 2)


def test_raises_callable_form_returns_the_exception(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with s.check("bad int") as c:
        err = c.raises(ValueError, int, "x")
        c.contains(str(err), "invalid literal")
        c.raises((KeyError, IndexError), [].pop)
    assert (c.passed, c.assertions) == (True, 3)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("c.raises(ValueError, int, '1')", "expected ValueError to be raised, nothing was raised"),
        ("c.raises(ValueError, lambda: {}['k'])", "expected ValueError, got KeyError: 'k'"),
        ("c.raises(ValueError, int, 'x', match='^nope', msg='parse')",
         "parse: expected ValueError matching '^nope', got ValueError: invalid literal for int() with base 10: 'x'"),
    ],
    ids=["nothing-raised", "other-exception", "no-match"],
)
def test_raises_callable_form_failures(tmp_path: Path, body: str, message: str) -> None:
    s = _scorer(tmp_path)
    with s.check("raises") as c:
        exec(body, {"c": c})
        c.true(True)  # not reached
    assert (_failure(c), c.assertions) == (message, 1)


def test_raises_context_manager_fails_when_nothing_is_raised(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with s.check("refused") as c:
        with c.raises(PermissionError):
            pass
        c.true(True)  # not reached
    assert (_failure(c), c.assertions) == ("expected PermissionError to be raised, nothing was raised", 1)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("c.true(0, 'tenant B saw nothing')", "tenant B saw nothing: expected a true value, got 0"),
        ("c.false([1])", "expected a false value, got [1]"),
        ("c.not_equal(3, 3)", "expected anything but 3, got it"),
        ("c.is_none(5)", "expected None, got 5"),
        ("c.is_not_none(None)", "expected a value, got None"),
        ("c.is_instance('1', int)", "expected an instance of int, got str '1'"),
        ("c.contains([1, 2], 3)", "expected [1, 2] to contain 3"),
        ("c.not_contains('abc', 'b')", "expected 'abc' not to contain 'b'"),
        ("c.matches('owner=C', r'owner=[AB]')", "expected 'owner=C' to match 'owner=[AB]'"),
        ("c.less(5, 3)", "expected a value < 3, got 5"),
        ("c.at_most(5, 3)", "expected a value <= 3, got 5"),
        ("c.greater(1, 3)", "expected a value > 3, got 1"),
        ("c.at_least(1, 3)", "expected a value >= 3, got 1"),
        ("c.close(0.5, 0.25, abs=0.1)", "expected 0.25 (rel=1e-09, abs=0.1), got 0.5"),
        ("c.fail('unreachable state')", "unreachable state"),
    ],
)
def test_failure_messages_show_both_sides(tmp_path: Path, body: str, message: str) -> None:
    s = _scorer(tmp_path)
    with s.check("one") as c:
        exec(body, {"c": c})
    assert (_failure(c), c.assertions) == (message, 1)


def test_equal_on_long_values_is_truncated_and_says_where_they_differ(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    expected = "a" * 5000 + "X" + "a" * 5000
    actual = "a" * 10001
    with s.check("long") as c:
        c.equal(actual, expected)
    message = _failure(c)
    assert message is not None and len(message) < 700
    assert "first difference at index 5000" in message and "expected 'X', got 'a'" in message


def test_using_a_check_outside_its_with_block_is_a_scorer_error(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    early = s.check("early")
    with pytest.raises(ScorerError, match="before its with block"):
        early.true(True)
    with s.check("late") as late:
        late.true(True)
    with pytest.raises(ScorerError, match="after its with block ended"):
        late.true(True)


def test_scorer_error_inside_a_check_is_not_swallowed(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with pytest.raises(ScorerError, match="metric 'm': value must be"):
        with s.check("bad metric") as c:
            c.true(True)
            s.metric("m", [1, 2])  # type: ignore[arg-type]
    assert not c.passed and "ScorerError" in (c.message or "")


def test_system_exit_inside_a_check_propagates_and_fails_it(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with pytest.raises(SystemExit):
        with s.check("left early") as c:
            c.true(True)
            sys.exit(0)
    assert (_failure(c), c.assertions) == ("did not finish: SystemExit: 0", 1)


def test_failure_of_an_outer_check_ends_the_inner_one(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with s.check("outer") as outer:
        with s.check("inner") as inner:
            inner.true(True)
            outer.equal(1, 2)
    assert (_failure(outer), _failure(inner)) == ("expected 2, got 1", "ended early: check 'outer' failed inside it")


def test_finish_is_idempotent_and_closes_the_scorer(tmp_path: Path) -> None:
    s = _scorer(tmp_path)
    with s.check("fine") as c:
        c.true(True)
    assert s.finish() == 0
    assert s.finish() == 0
    with pytest.raises(ScorerError, match="already finished"):
        s.check("too late")
    with pytest.raises(ScorerError, match="already finished"):
        s.metric("too late", 1)


def test_finish_by_hand_returns_1_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("EVALRUN_REPORT", raising=False)
    monkeypatch.chdir(tmp_path)  # so a report written by hand, anywhere relative, would show below
    s = Scorer()
    assert s.report_path is None
    with s.check("fails") as c:
        c.equal("a", "b")
    assert s.finish() == 1
    assert capsys.readouterr().out.splitlines()[0] == "FAIL  fails  (1 assertion): expected 'b', got 'a'"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["", "   ", None, 3])
def test_check_name_must_be_a_non_empty_string(tmp_path: Path, name: Any) -> None:
    with pytest.raises(ScorerError, match="check name must be a non-empty string"):
        _scorer(tmp_path).check(name)


# -- a report path that is not a file ---------------------------------------------


def test_a_report_path_naming_an_open_file_gets_the_finished_report_once_appended(tmp_path: Path) -> None:
    # EVALRUN_REPORT=/dev/stdout, to read a report by hand; /dev/fd/1 here, which a
    # broken rule could not rename over (it would fail in /proc's fd folder, not
    # turn /dev/stdout into a regular file, as root).
    script = tmp_path / "score.py"
    script.write_text(
        "from evalrun import scorer\n"
        "print('before', flush=True)\n"
        "for name in ('one', 'two'):\n"
        "    with scorer.check(name) as c:\n"
        "        c.true(True)\n"
        "scorer.finish()\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_")}
    env["EVALRUN_REPORT"] = "/dev/fd/1"
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    before, _, report = proc.stdout.partition("before\n")
    assert before == ""
    assert [c["name"] for c in json.loads(report)["checks"]] == ["one", "two"]  # one report, not one per check


def test_the_sdk_and_evalrun_agree_on_what_is_written_into(tmp_path: Path) -> None:
    from evalrun import scorer as sdk
    from evalrun.atomic import writes_in_place

    plain = tmp_path / "plain.json"
    plain.write_text("{}")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    paths = ["/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/2", str(plain), str(fifo),
             str(tmp_path), str(tmp_path / "missing.json"), "relative.json"]
    assert [sdk._writes_in_place(p) for p in paths] == [writes_in_place(p) for p in paths]
    assert [writes_in_place(p) for p in paths] == [True] * 5 + [False, True, False, False, False]
