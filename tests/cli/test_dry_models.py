"""``evalrun dry`` tells what a model eval's run would meet: its mode, fixtures folder and their state, the upstream."""

from __future__ import annotations

from harness import eval_entry, json_scorer

NO_CALLS = json_scorer([{"name": "fine", "assertions": 1, "passed": True}])


def _project(project, extra_manifest: str = "", files: dict[str, str] | None = None):
    manifest = (
        "[tiers.t2]\n[tiers.t3]\n"
        + eval_entry("a", tier="t2", extra="model = true")
        + eval_entry("a-live", tier="t3", extra='model = true\nfixtures_for = "a"').replace('dir = "evals/a-live"', 'dir = "evals/a"')
        + extra_manifest
    )
    return project({"manifest.toml": manifest, "evals/a/score.py": NO_CALLS, **(files or {})})


def test_dry_t2_says_an_eval_without_recordings_would_fail_and_how_to_record(project) -> None:
    r = _project(project).run("dry", "t2")
    assert r.code == 0, r.output
    assert "a: would run, and FAIL: its model calls have no recordings in evals/a/fixtures/a/" in r.out
    assert ("  model: replay from evals/a/fixtures/a/: missing: nothing recorded in evals/a/fixtures/; "
            "record them with: evalrun t3 --record -e a-live") in r.out
    assert "a: would run\n" not in r.out


def test_dry_t2_counts_the_recorded_calls_and_what_the_last_run_left_unplayed(project) -> None:
    proj = _project(project, files={"evals/a/fixtures/a/0001.json": "{}", "evals/a/fixtures/a/0002.json": "{}"})
    before = proj.run("dry", "t2")
    assert "a: would run\n" in before.out and "model: replay from evals/a/fixtures/a/: 2 recorded calls\n" in before.out
    ran = proj.run("t2")  # the scorer makes no call: both recordings are left unplayed
    assert ran.code == 0 and "was recorded but not requested" in ran.out, ran.output
    after = proj.run("dry", "t2")
    assert "2 recorded calls; the last run left 2 unplayed (re-record, or delete them)" in after.out, after.out


def test_dry_names_fixtures_recorded_for_another_experiment(project) -> None:
    proj = _project(
        project,
        '[experiments.m]\n[experiments.n]\n',
        files={"evals/a/fixtures/@n/a/0001.json": "{}"},
    )
    r = proj.run("dry", "t2")
    assert "a[m]: would run, and FAIL: its model calls have no recordings in evals/a/fixtures/@m/a/" in r.out, r.out
    assert "  recorded for another experiment: @n/a/ (1 recorded call)" in r.out
    assert "a[n]: would run\n" in r.out


def test_dry_t3_shows_live_mode_the_upstream_and_where_record_writes(project) -> None:
    proj = _project(project, '[models]\nupstream = "http://127.0.0.1:9/v1"\n', files={"evals/a/fixtures/a/0001.json": "{}"})
    r = proj.run("dry", "t3")
    assert "a-live: would run" in r.out, r.out
    assert "  model: live to openai and anthropic: http://127.0.0.1:9/v1 ([models] upstream)\n" in r.out
    assert "    with --record: records into evals/a/fixtures/a/ (the fixtures of a) (1 recorded call)" in r.out
    override = proj.run("dry", "t3", env={"EVALRUN_UPSTREAM": "http://127.0.0.1:8/"})
    assert "  model: live to openai and anthropic: http://127.0.0.1:8 (EVALRUN_UPSTREAM)\n" in override.out
    # One provider's own upstream, and the SDK's variable of the user's environment for the other.
    split = proj.run("dry", "t3", env={"EVALRUN_UPSTREAM_ANTHROPIC": "http://127.0.0.1:7", "OPENAI_BASE_URL": "http://gw:1/v1"})
    assert ("  model: live to openai: http://127.0.0.1:9/v1 ([models] upstream); "
            "anthropic: http://127.0.0.1:7 (EVALRUN_UPSTREAM_ANTHROPIC)\n") in split.out, split.out
    endpoint = proj.run("dry", "t3", env={"EVALRUN_UPSTREAM": "http://127.0.0.1:8/v1/chat/completions"})
    assert endpoint.code == 2
    assert endpoint.err.strip().splitlines()[-1] == (
        "evalrun: error: EVALRUN_UPSTREAM='http://127.0.0.1:8/v1/chat/completions': is an endpoint, not a base URL "
        '(the SDK adds /chat/completions itself, so it would be doubled); use "http://127.0.0.1:8/v1"'
    ), endpoint.err


def test_dry_shows_the_budgets_of_the_tier_the_eval_and_the_experiment(project) -> None:
    manifest = (
        "[tiers.t2]\n[tiers.t3]\nbudget = { calls = 50, tokens = 100000, usd = 2.5 }\n"
        "[experiments.m]\nbudget = { calls = 5 }\n"
        + eval_entry("a", tier="t2", extra="model = true")
        + eval_entry("a-live", tier="t3", extra='model = true\nfixtures_for = "a"\nbudget = { tokens = 9000 }')
        .replace('dir = "evals/a-live"', 'dir = "evals/a"')
    )
    proj = project({"manifest.toml": manifest, "evals/a/score.py": NO_CALLS})
    r = proj.run("dry", "t3")
    assert r.code == 0, r.output
    assert "tier t3 budget: at most 50 calls, 100,000 tokens, 2.5 USD (the run's model calls, all evals together)\n" in r.out
    assert "  budget: at most 9,000 tokens (this eval's calls)\n" in r.out, r.out
    assert "  experiment m: changes nothing; budget at most 5 calls (the column's calls)\n" in r.out, r.out
    t2 = proj.run("dry", "t2")
    assert "tier t2 budget: none\n" in t2.out, t2.out


def test_dry_t3_says_when_live_calls_are_not_capped(project) -> None:
    r = _project(project).run("dry", "t3")
    assert "tier t3 budget: none (live model calls are not capped)\n" in r.out, r.out
