"""Repeats and pass rates, through the real CLI with the deterministic "flaky" scorer of gate-bites' repeat cases."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import tomllib
import xml.etree.ElementTree as ET
import sys
from pathlib import Path

import pytest

from harness import an_eval, default_sigint, manifest
from harness.stub_projects import FLAKY, flaky_coin
from harness.junit_schema import published_junit_schema



def flaky_project(project, keys: dict | None = None, tier_keys: dict | None = None):
    """The flaky coin of the own gate-bites as eval "coin"; ``keys`` its keys (default: repeat 10, floor 0.8)."""
    keys = {"repeat": 10, "min_pass_rate": 0.8} if keys is None else keys
    return project(flaky_coin(tier_keys, **keys).project())


def fails(*repeats: int) -> dict[str, str]:
    return {"FLAKY_FAIL": ",".join(map(str, repeats))}


def rate_of(proj, check: str = "answer is right") -> dict:
    return next(c for c in proj.eval_result("coin")["checks"] if c["name"] == check)["rate"]


def log_lines(path: Path) -> list[list[int]]:
    return [list(map(int, line.split())) for line in path.read_text().splitlines()]


def test_seven_of_ten_under_floor_fails_with_the_rate(project, tmp_path: Path) -> None:
    proj = flaky_project(project)
    log = tmp_path / "runs.log"
    r = proj.run("t1", "-j", "2", env={**fails(0, 4, 9), "FLAKY_LOG": str(log)})
    assert r.code == 1, r.output
    assert 'check "answer is right" passed 7 of 10 (floor 0.8)' in r.out
    result = proj.eval_result("coin")
    assert result["status"] == "failed"
    assert result["repeats"]["runs"] == 10 and result["repeats"]["below_floor"] == ["answer is right"]
    rate = rate_of(proj)
    assert (rate["runs"], rate["passes"], rate["failed_runs"]) == (10, 7, [0, 4, 9])
    assert rate["pass_at_k"]["1"] == 0.7 and rate["pass_hat_k"]["3"] == pytest.approx(35 / 120, abs=1e-6)
    assert rate["wilson_95"] == pytest.approx([0.3968, 0.8922], abs=1e-4)
    # every run was its own scorer run: its index in EVALRUN_REPEAT, a fresh workdir, another process
    runs = log_lines(log)
    assert sorted(run[0] for run in runs) == list(range(10))
    assert all(run[2] == 1 for run in runs), "a run saw the previous run's workdir"
    assert len({run[1] for run in runs}) == 10
    assert rate_of(proj, "workdir is fresh")["passes"] == 10
    # the failing runs' messages are the check's evidence
    check = next(c for c in result["checks"] if c["name"] == "answer is right")
    assert "run 5 (EVALRUN_REPEAT=4): wrong answer on repeat 4" in check["evidence"]


def test_nine_of_ten_over_floor_passes_as_flaky_and_is_listed_everywhere(project) -> None:
    proj = flaky_project(project)
    r = proj.run("t1", "-j", "2", "--junit", "j.xml", "--markdown", "m.md", env=fails(3))
    assert r.code == 0, r.output
    assert '  FLAKY coin: check "answer is right" passed 9 of 10 (floor 0.8)' in r.out.splitlines()
    assert "flaky (1):" in r.out
    assert '"answer is right": 9/10 passed (90%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70' in r.out
    result = proj.eval_result("coin")
    assert result["status"] == "passed" and result["repeats"]["flaky"] == ["answer is right"]
    assert rate_of(proj)["flaky"] is True and rate_of(proj, "workdir is fresh")["flaky"] is False
    suite = ET.parse(proj.root / "j.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["flaky.answer is right"] == "passed 9 of 10 (floor 0.8)"
    assert props["rate.answer is right"] == "9/10 (0.90)"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "answer is right")
    assert case.find("failure") is None and "flaky" in case.find("system-out").text
    markdown = (proj.root / "m.md").read_text()
    assert "### Flaky checks (1)" in markdown and "passed 9 of 10 (floor 0.8" in markdown
    assert "### Pass rates" in markdown and "9/10 passed (90%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70" in markdown


def test_always_passing_is_not_flaky(project) -> None:
    proj = flaky_project(project)
    r = proj.run("t1", "-j", "2")
    assert r.code == 0, r.output
    assert "flaky" not in r.out.lower()
    assert rate_of(proj)["passes"] == 10


def test_baseline_learns_rates_and_a_drop_beyond_chance_exits_3(project) -> None:
    proj = flaky_project(project, {"repeat": 10, "min_pass_rate": 0.3})
    up = proj.run("baseline", "--update", "t1", "-j", "2")
    assert up.code == 0, up.output
    text = (proj.root / "baselines" / "t1.toml").read_text()
    assert '"answer is right" = { assertions = 2, passes = 10, runs = 10 }' in text
    assert tomllib.loads(text)["coin"]["answer is right"] == {"assertions": 2, "passes": 10, "runs": 10}
    # 10/10 -> 9/10: noise
    noise = proj.run("t1", "-j", "2", env=fails(5))
    assert noise.code == 0, noise.output
    assert "regression" not in noise.out
    # 10/10 -> 3/10: decay (passes the 0.3 floor, so nothing failed: exit 3)
    decay = proj.run("t1", "-j", "2", env=fails(0, 1, 2, 3, 4, 5, 6))
    assert decay.code == 3, decay.output
    line = next(x for x in decay.out.splitlines() if x.startswith("regression:"))
    assert line == (
        'regression: coin: check "answer is right" passes 3 of 10 (30%), baseline 10 of 10 (100%): '
        "lower beyond chance (one-sided Fisher exact p = 0.0015 < alpha 0.05)"
    )
    change = proj.results()["baseline"]["regressions"][0]
    assert change["kind"] == "decayed" and change["p_value"] == pytest.approx(286 / 184756, abs=1e-6)
    assert change["baseline_rate"] == [10, 10] and change["current_rate"] == [3, 10]
    # re-judged from the results file, without running
    diff = proj.run("baseline", "diff", "t1", "--from-results", ".evalrun/results/t1.json")
    assert diff.code == 3 and "p = 0.0015" in diff.out


def test_alpha_is_configurable(project) -> None:
    # 10/10 -> 7/10 is p = 0.105: noise at 0.05, decay at alpha 0.2
    proj = flaky_project(project, {"repeat": 10, "min_pass_rate": 0.5, "alpha": 0.2})
    assert proj.run("baseline", "--update", "t1", "-j", "2").code == 0
    r = proj.run("t1", "-j", "2", env=fails(1, 2, 3))
    assert r.code == 3, r.output
    assert "p = 0.1053 < alpha 0.2" in r.out


def test_a_rate_higher_beyond_chance_makes_the_baseline_stale(project) -> None:
    proj = flaky_project(project, {"repeat": 10, "min_pass_rate": 0.3})
    assert proj.run("baseline", "--update", "t1", "-j", "2", env=fails(0, 1, 2, 3, 4, 5, 6)).code == 0
    assert "passes = 3, runs = 10" in (proj.root / "baselines" / "t1.toml").read_text()
    r = proj.run("t1", "-j", "2")
    assert r.code == 0, r.output
    assert "baseline is stale: 1 check passing more often" in r.out
    strict = proj.run("t1", "-j", "2", "--strict-baseline")
    assert strict.code == 3, strict.output
    assert "higher beyond chance" in strict.out


def test_update_refuses_a_run_under_its_floor(project) -> None:
    proj = flaky_project(project)
    r = proj.run("baseline", "--update", "t1", "-j", "2", env=fails(0, 1, 2))
    assert r.code == 1, r.output
    assert "baseline not updated" in r.output and "coin (failed)" in r.output
    assert not (proj.root / "baselines" / "t1.toml").exists()


def test_repeat_option_overrides_and_dry_shows_the_count(project) -> None:
    proj = flaky_project(project, {}, tier_keys={"repeat": 4})
    dry = proj.run("dry", "t1")
    assert "coin: would run × 4 (floor 1)" in dry.out, dry.output
    r = proj.run("t1", "--repeat", "3", "-j", "2", env=fails(1))
    assert r.code == 1, r.output
    assert 'check "answer is right" passed 2 of 3 (floor 1)' in r.out
    assert proj.run("t1", "--repeat", "0").code == 2


def test_early_stop_ends_the_repeats_once_decided(project, tmp_path: Path) -> None:
    proj = flaky_project(project, {"repeat": 10, "stop": "decided"})
    log = tmp_path / "runs.log"
    r = proj.run("t1", "-j", "1", env={**fails(0), "FLAKY_LOG": str(log)})
    assert r.code == 1, r.output
    assert len(log_lines(log)) == 1  # floor 1.0 and one failure: nothing can save it
    result = proj.eval_result("coin")
    assert result["repeats"]["stopped_early"] is True and len(result["repeats"]["runs_detail"]) == 1
    assert "stopped early after 1 of 10 runs: the verdict was decided" in r.out
    assert "at most 9 of 10 could pass" in r.out


def test_early_stop_of_a_passing_eval_at_its_floor(project, tmp_path: Path) -> None:
    proj = flaky_project(project, {"repeat": 10, "min_pass_rate": 0.8, "stop": "decided"})
    log = tmp_path / "runs.log"
    r = proj.run("t1", "-j", "1", env={**fails(1), "FLAKY_LOG": str(log)})
    assert r.code == 0, r.output
    assert len(log_lines(log)) == 9  # 8 passes of "answer is right" decide it (run 1 failed)
    assert "rates from 9 runs" in r.out or "stopped early after 9 of 10 runs" in r.out


def test_without_early_stop_every_run_is_made(project, tmp_path: Path) -> None:
    proj = flaky_project(project, {"repeat": 10})
    log = tmp_path / "runs.log"
    assert proj.run("t1", "-j", "1", env={**fails(0), "FLAKY_LOG": str(log)}).code == 1
    assert len(log_lines(log)) == 10


def test_a_check_seen_in_only_some_runs_is_reported_as_such(project) -> None:
    proj = flaky_project(project, {"repeat": 5, "min_pass_rate": 0.5})
    r = proj.run("t1", "-j", "2", env={"FLAKY_ABSENT": "1,3"})
    assert r.code == 0, r.output
    rate = rate_of(proj, "sometimes there")
    assert (rate["seen"], rate["passes"], rate["runs"]) == (3, 3, 5)
    assert "seen in 3 of 5 runs" in r.out


def test_a_crash_in_one_run_is_never_noise(project) -> None:
    proj = flaky_project(project, {"repeat": 5, "min_pass_rate": 0.5})
    r = proj.run("t1", "-j", "2", env={"FLAKY_CRASH": "3"})
    assert r.code == 1, r.output
    result = proj.eval_result("coin")
    assert result["status"] == "error"
    assert result["message"].startswith("run 4 of 5: ")


def test_eval_keys_override_the_tiers(project) -> None:
    proj = flaky_project(project, {"min_pass_rate": 0.5}, tier_keys={"repeat": 4, "min_pass_rate": 1.0})
    r = proj.run("t1", "-j", "2", env=fails(0, 1))
    assert r.code == 0, r.output
    assert 'check "answer is right" passed 2 of 4 (floor 0.5)' in r.out


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"min_pass_rate": 1.5}, 'evals[0] ("coin").min_pass_rate: must be <= 1'),
        ({"repeat": 0}, 'evals[0] ("coin").repeat: must be >= 1'),
        ({"stop": "never"}, 'evals[0] ("coin").stop: must be one of'),
        ({"alpha": 0}, 'evals[0] ("coin").alpha: must be > 0'),
    ],
)
def test_bad_repeat_keys_are_one_line_exit_2(project, keys: dict, message: str) -> None:
    proj = flaky_project(project, keys)
    r = proj.run("t1")
    assert r.code == 2, r.output
    assert message in r.err and len(r.err.splitlines()) == 1


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{ assertions = 2, passes = 11, runs = 10 }", "passes (11) must be at most runs (10)"),
        ("{ assertions = 2, passes = 1 }", "missing 'runs'"),
        ('{ assertions = 2, passes = 1, runs = "ten" }', "runs must be an integer >= 0"),
        ("{ assertions = 2, passes = 1, runs = 2, extra = 1 }", "unknown key 'extra'"),
    ],
)
def test_a_bad_rate_entry_in_the_baseline_is_exit_2(project, entry: str, message: str) -> None:
    proj = flaky_project(project)
    proj.write({"baselines/t1.toml": f'[coin]\n"answer is right" = {entry}\n'})
    r = proj.run("t1")
    assert r.code == 2, r.output
    assert f'baselines/t1.toml: [coin] "answer is right": {message}' in r.err


def test_shards_keep_an_evals_repeats_together_and_merge_judges_rates(project) -> None:
    proj = project(manifest(*(
        an_eval(n, ["python", "flaky.py"], dir="evals/coin", repeat=10, min_pass_rate=0.3, env={"FLAKY_FAIL": fail})
        for n, fail in (("a", ""), ("b", "0,1,2,3,4,5,6"))
    ), tiers={"t1": {}}).project({"evals/coin/flaky.py": FLAKY}))
    proj.write({"baselines/t1.toml": "".join(
        f'[{n}]\n"answer is right" = {{ assertions = 2, passes = 10, runs = 10 }}\n' for n in ("a", "b"))})
    shards = []
    for i in (1, 2):
        r = proj.run("t1", "--shard", f"{i}/2", "-j", "2", "--json", f"s{i}.json")
        shards.append(f"s{i}.json")
        assert r.code in (0, 3), r.output
    for path in shards:
        (result,) = json.loads((proj.root / path).read_text())["evals"]
        assert result["repeats"]["runs"] == 10  # all ten runs of an eval in one shard
    merged = proj.run("merge", *shards)
    assert merged.code == 3, merged.output
    assert 'regression: b: check "answer is right" passes 3 of 10 (30%), baseline 10 of 10 (100%)' in merged.out


def test_flaky_junit_follows_the_published_junit_10_schema(project) -> None:

    schema = published_junit_schema()  # skips locally without EVALRUN_JUNIT_XSD; CI provides it
    proj = flaky_project(project)
    r = proj.run("t1", "-j", "2", "--junit", "j.xml", env=fails(3, 7))
    assert r.code == 0, r.output
    root = ET.parse(proj.root / "j.xml").getroot()
    case = next(c for c in root.iter("testcase") if c.get("name") == "answer is right")
    assert [f.get("message") for f in case.findall("flakyFailure")] == [
        "run 4 (EVALRUN_REPEAT=3): wrong answer on repeat 3",
        "run 8 (EVALRUN_REPEAT=7): wrong answer on repeat 7",
    ]
    for tc in root.iter("testcase"):
        tc.attrib.pop("assertions", None)  # the one documented extension
    schema.validate(ET.tostring(root, encoding="unicode"))


def test_ctrl_c_mid_repeats_keeps_the_finished_runs_rates_marked_partial(project, tmp_path: Path) -> None:
    proj = flaky_project(project, {"repeat": 4})
    log = tmp_path / "runs.log"
    # fresh, not forked: Ctrl-C sent mid-run
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun", "t1", "-j", "1"], cwd=proj.root,
        env=proj.env({"FLAKY_HANG": "2", "FLAKY_LOG": str(log)}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,  # Ctrl-C must work even when the suite runs in the background
    )
    deadline = time.monotonic() + 60
    while not (log.exists() and len(log.read_text().splitlines()) == 3):  # runs 0 and 1 done, run 2 hanging
        assert time.monotonic() < deadline and proc.poll() is None, "the runs never got there"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    result = proj.eval_result("coin")
    assert result["status"] == "interrupted"
    assert result["repeats"]["partial"] is True and result["repeats"]["runs"] == 2
    assert rate_of(proj)["passes"] == 2 and rate_of(proj)["runs"] == 2
    assert "rates are partial" in result["message"]


def test_an_eval_that_starts_repeating_makes_its_plain_baseline_stale(project) -> None:
    proj = flaky_project(project, {})
    assert proj.run("baseline", "--update", "t1").code == 0
    assert '"answer is right" = 2' in (proj.root / "baselines" / "t1.toml").read_text()
    r = proj.run("t1", "--repeat", "3", "-j", "2")
    assert r.code == 0, r.output
    assert "baseline is stale: 3 checks with pass rates to record" in r.out
    assert proj.run("t1", "--repeat", "3", "-j", "2", "--strict-baseline").code == 3
    assert proj.run("baseline", "--update", "t1").code == 0  # without repeats: plain counts again, nothing stale
    assert proj.run("t1").code == 0


def test_flaky_checks_are_a_github_warning_and_in_the_step_summary(project) -> None:
    proj = flaky_project(project)
    summary = proj.root / "summary.md"
    r = proj.run("t1", "-j", "2", env={**fails(3), "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert r.code == 0, r.output
    warning = next(line for line in r.out.splitlines() if line.startswith("::warning") and "flaky" in line)
    assert "file=evals/coin" in warning and 'passed 9 of 10 (floor 0.8)' in warning
    assert "### Flaky checks (1)" in summary.read_text()


TAP_SKIPS = """\
import os
k = int(os.environ["EVALRUN_REPEAT"])
print("1..4")
print("ok 1 - adds")
print("ok 2 - network # SKIP no network")                     # every run, one reason
print("ok 3 - gpu # SKIP " + ("driver too old" if k == 2 else "no gpu"))  # every run, two reasons
print("ok 4 - slow # SKIP too slow" if k == 1 else "ok 4 - slow")       # one run of three
"""


def test_a_repeated_evals_skipped_tests_are_kept_each_once_saying_where_runs_disagree(project) -> None:
    proj = project(manifest(
        an_eval("skips", ["python", "t.py"], format="tap", repeat=3, min_pass_rate=0.6, files={"t.py": TAP_SKIPS}),
        tiers={"t1": {}},
    ).project())
    r = proj.run("t1", "-j", "2", "--junit", "j.xml")
    assert r.code == 0, r.output
    expected = [
        {"name": "network", "reason": "no network"},
        {"name": "gpu", "reason": "no gpu in 2 of 3 runs, driver too old in 1 of 3 runs"},
        {"name": "slow", "reason": "too slow in 1 of 3 runs"},
    ]
    result = proj.eval_result("skips")
    assert result["skipped_tests"] == expected
    note = ("tests skipped: network (no network); gpu (no gpu in 2 of 3 runs, driver too old in 1 of 3 runs); "
            "slow (too slow in 1 of 3 runs)")
    assert result["message"].endswith(note), result["message"]
    assert note in r.out
    assert "1 passed, 0 failed, 0 skipped (3 tests skipped inside evals)" in r.out.splitlines()
    skipped = {c.get("name"): c.find("skipped").get("message")
               for c in ET.parse(proj.root / "j.xml").getroot().iter("testcase") if c.find("skipped") is not None}
    assert skipped == {e["name"]: e["reason"] for e in expected}
    # "slow" ran as a check in two runs and was skipped in the third: not passed there, and said as a skip.
    slow = next(c for c in result["checks"] if c["name"] == "slow")
    assert {k: slow["rate"][k] for k in ("runs", "passes", "seen", "skipped", "failed_runs")} == {
        "runs": 3, "passes": 2, "seen": 2, "skipped": 1, "failed_runs": [1]}
    assert slow["evidence"] == "run 2 (EVALRUN_REPEAT=1): skipped in this run's report (too slow)"
    assert 'flaky: check "slow" passed 2 of 3 (floor 0.6), seen in 2 of 3 runs (skipped in 1)' in result["message"]


def test_a_test_skipped_alike_in_every_run_reads_as_in_a_single_run(project) -> None:
    tap = 'print("1..2")\nprint("ok 1 - adds")\nprint("ok 2 - network # SKIP no network")\n'
    proj = project(manifest(
        an_eval("skips", ["python", "t.py"], format="tap", repeat=2, files={"t.py": tap}), tiers={"t1": {}},
    ).project())
    repeated = proj.run("t1")
    assert repeated.code == 0, repeated.output
    assert proj.eval_result("skips")["skipped_tests"] == [{"name": "network", "reason": "no network"}]
    assert proj.eval_result("skips")["message"] == "tests skipped: network (no network)"
    assert "(1 test skipped inside evals)" in repeated.out
    once = proj.run("t1", "--repeat", "1")
    assert once.code == 0, once.output
    assert proj.eval_result("skips")["skipped_tests"] == [{"name": "network", "reason": "no network"}]


# A runner writing its report at a fixed path of the eval's folder: run 0 fails, run 1 passes. JUnit: it
# exits 0 on a failed test; promptfoo: 100, as promptfoo does. Each run writes, then (when the other run is
# under way at the same time) waits until the other has written too, so runs sharing the file would both
# read the last one written (2 of 2, or an "exit 100" run whose report passed).
FIXED_PATH_RUNNER = """
import json, os, sys, time
from pathlib import Path
me = os.environ["EVALRUN_REPEAT"]
other = "1" if me == "0" else "0"
ok = me == "1"
meet = Path("meet")
meet.mkdir(exist_ok=True)
(meet / f"started-{me}").write_text("")
if sys.argv[1] == "junit":
    failure = "" if ok else '<failure message="run 0 fails"/>'
    Path("report.xml").write_text(f'<testsuite name="s"><testcase name="adds up" assertions="1">{failure}</testcase></testsuite>')
else:
    part = {"pass": ok, "score": int(ok), "reason": "ok" if ok else "Expected X", "assertion": {"type": "contains", "value": "X"}}
    row = {"testCase": {"description": "adds up", "vars": {}, "assert": [{"type": "contains", "value": "X"}]}, "vars": {},
           "provider": {"id": "echo", "label": "echo"}, "prompt": {"raw": "p", "label": "p"}, "success": ok,
           "failureReason": 0 if ok else 1, "gradingResult": {"pass": ok, "reason": "", "componentResults": [part]}}
    Path("out.json").write_text(json.dumps({"evalId": "e", "results": {"version": 3, "results": [row], "stats": {}}}))
(meet / f"wrote-{me}").write_text("")
def wait_for(path, seconds):
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
wait_for(meet / f"started-{other}", 2)
if (meet / f"started-{other}").exists():
    wait_for(meet / f"wrote-{other}", 20)
sys.exit(0 if ok or sys.argv[1] == "junit" else 100)
"""


@pytest.mark.parametrize("fmt", [{"format": "junit", "junit": "report.xml"}, {"format": "promptfoo", "promptfoo": "out.json"}],
                         ids=["junit", "promptfoo"])
def test_runs_sharing_a_fixed_report_path_are_each_judged_on_their_own_report(project, fmt: dict) -> None:
    kind = fmt["format"]
    proj = project(manifest(an_eval(
        "coin", ["python", "runner.py", kind], repeat=2, min_pass_rate=0.5, files={"runner.py": FIXED_PATH_RUNNER}, **fmt,
    )).project())
    r = proj.run("t1", "-j", "2")
    assert r.code == 0, r.output
    [check] = proj.eval_result("coin")["checks"]
    rate = check["rate"]
    assert (rate["runs"], rate["passes"]) == (2, 1), (rate, r.output)  # each run's own verdict, not the last writer's
