"""``--last-failed`` / ``--lf``: only what failed, errored or regressed in the tier's last run (pytest's --lf)."""

from __future__ import annotations

from harness import eval_entry, json_scorer

PASS = [{"name": "ok", "assertions": 2, "passed": True}]
FAIL = [{"name": "ok", "assertions": 2, "passed": False, "message": "no"}]


def suite(project, **scorers: str):
    files = {"manifest.toml": "[tiers.t1]\n" + "".join(eval_entry(n) for n in scorers)}
    files.update({f"evals/{n}/score.py": s for n, s in scorers.items()})
    return project(files)


def ran(output: str) -> set[str]:
    return {line.split()[1] for line in output.splitlines() if line.split()[:1] and line.split()[0] in ("PASS", "FAIL", "ERROR")}


def test_last_failed_runs_only_the_failed_and_errored_evals_of_the_last_run(project):
    proj = suite(project, good=json_scorer(PASS), bad=json_scorer(FAIL), crash="raise SystemExit('boom')\n")
    first = proj.run("t1")
    assert first.code == 1 and ran(first.out) == {"good", "bad", "crash"}, first.output
    again = proj.run("t1", "--last-failed")
    assert again.code == 1, again.output
    assert ran(again.out) == {"bad", "crash"}, again.output
    assert "--last-failed: 2 of 3 evals failed or regressed in the last t1 run (.evalrun/results/t1.json): bad, crash" in again.out
    assert ran(proj.run("t1", "--lf").out) == {"bad", "crash"}  # the alias, and a --lf run's own failures are kept


def test_last_failed_includes_a_regression_and_runs_everything_when_nothing_went_wrong(project):
    proj = suite(project, good=json_scorer(PASS), weak=json_scorer(PASS))
    assert proj.run("baseline", "--update", "t1").code == 0
    (proj.root / "evals/weak/score.py").write_text(json_scorer([{"name": "ok", "assertions": 1, "passed": True}]))
    regressed = proj.run("t1")
    assert regressed.code == 3, regressed.output
    only = proj.run("t1", "--lf")
    assert ran(only.out) == {"weak"} and only.code == 3, only.output
    (proj.root / "evals/weak/score.py").write_text(json_scorer(PASS))
    assert proj.run("t1", "--lf").code == 0
    everything = proj.run("t1", "--lf")
    assert ran(everything.out) == {"good", "weak"}, everything.output
    assert "--last-failed: nothing failed or regressed in the last t1 run" in everything.out
    assert "running every selected eval of t1" in everything.out


def test_last_failed_without_a_results_file_runs_everything_and_says_so(project):
    proj = suite(project, good=json_scorer(PASS))
    run = proj.run("t1", "--lf")
    assert run.code == 0 and ran(run.out) == {"good"}, run.output
    assert "--last-failed: no results file at .evalrun/results/t1.json; running every selected eval of t1" in run.out


def test_last_failed_with_shard_is_a_usage_error(project):
    proj = suite(project, good=json_scorer(PASS))
    run = proj.run("t1", "--lf", "--shard", "1/2")
    assert run.code == 2 and "--last-failed with --shard" in run.err, run.output
