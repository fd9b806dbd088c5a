"""Repeats and baselines (issue 22): baseline --update --repeat, a baseline of pass rates repeats a plain run as
recorded, and the FAIL line of a repeated check shows its outcomes run by run (●○, + and - where ● cannot go)."""

from __future__ import annotations

import tomllib

from harness.stub_projects import flaky_coin


def coin(project, **keys: object):
    """The flaky coin of the own gate-bites as eval "coin"; ``keys`` its keys (default: floor 0.6)."""
    return project(flaky_coin(**(keys or {"min_pass_rate": 0.6})).project())


def test_baseline_update_takes_repeat_and_a_plain_run_then_repeats_as_recorded(project) -> None:
    proj = coin(project)
    update = proj.run("baseline", "--update", "t1", "-e", "coin", "--repeat", "5", env={"FLAKY_FAIL": "2"})
    assert update.code == 0, update.output
    entry = tomllib.loads((proj.root / "baselines/t1.toml").read_text())["coin"]["answer is right"]
    assert (entry["passes"], entry["runs"]) == (4, 5)
    plain = proj.run("t1", env={"FLAKY_FAIL": "2"})
    assert plain.code == 0, plain.output
    assert ("coin: runs 5 times, as its baseline's pass rates were recorded (set repeat = 5 in the manifest "
            "to say so there, or pass --repeat N)") in plain.out
    assert proj.eval_result("coin")["repeats"]["runs"] == 5
    assert proj.run("t1", "--repeat", "2").out.count("as its baseline's pass rates were recorded") == 0


def test_baseline_update_refuses_repeat_with_from_results(project) -> None:
    proj = coin(project)
    r = proj.run("baseline", "--update", "t1", "--repeat", "3", "--from-results", "x.json")
    assert r.code == 2 and "--repeat runs the tier; --from-results reads a run already made" in r.err, r.output


def test_the_fail_line_of_a_repeated_check_shows_its_outcomes(project) -> None:
    proj = coin(project, repeat=5, min_pass_rate=0.8)
    r = proj.run("t1", "-j", "1", env={"FLAKY_FAIL": "1,3", "PYTHONIOENCODING": "utf-8"})
    assert r.code == 1, r.output
    line = next(ln for ln in r.out.splitlines() if ln.startswith("FAIL"))
    assert 'check "answer is right" passed 3 of 5 (floor 0.8) ●○●○●' in line, line
    ascii_out = proj.run("t1", "-j", "1", env={"FLAKY_FAIL": "1,3", "PYTHONIOENCODING": "ascii"})
    line = next(ln for ln in ascii_out.out.splitlines() if ln.startswith("FAIL"))
    assert "passed 3 of 5 (floor 0.8) +-+-+" in line, line
