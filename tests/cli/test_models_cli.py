"""Model calls through the real CLI: keys kept out, record then replay, missing fixtures, budgets."""

from __future__ import annotations

import json

from harness.fakes_upstream import FakeUpstream
from harness.model_projects import CALLER, SECRET, model_project


def _evidence(proj, name: str, tier: str) -> dict:
    return json.loads(proj.eval_result(name, tier)["checks"][0]["evidence"])


def test_t1_scorers_get_placeholders_and_an_unreachable_model(project) -> None:
    proj = project(
        {
            "manifest.toml": '[[evals]]\nname = "caller"\ntier = "t1"\ndir = "e"\nrun = ["python", "score.py"]\n',
            "e/score.py": CALLER,
        }
    )
    r = proj.run("t1", env={"OPENAI_API_KEY": SECRET, "TOLERATE": "1"})
    assert r.code == 0, r.output
    seen = _evidence(proj, "caller", "t1")
    assert seen["key"] == "evalrun-placeholder-not-a-key"
    assert seen["base"].startswith("http://127.0.0.1:9/")
    assert seen["answers"][0].startswith("error")
    assert SECRET not in r.output + (proj.root / ".evalrun/results/t1.json").read_text()


def test_record_in_t3_then_replay_in_t2_without_a_key(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(project, tier="t3", extra='env = { CALLS = "2" }', tier_table=f'[models]\nupstream = "{upstream.url}"\n\n')
        r = proj.run("t3", "--record", env={"OPENAI_API_KEY": SECRET})
        assert r.code == 0, r.output
        assert len(upstream.requests) == 2
        headers = {k.lower(): v for k, v in upstream.requests[0].headers.items()}
        assert headers.get("authorization") == f"Bearer {SECRET}"  # t3 keeps the key
    fixtures = sorted((proj.root / "evals" / "caller" / "fixtures" / "caller").glob("*.json"))
    assert [f.name for f in fixtures] == ["0001.json", "0002.json"]
    assert all(SECRET not in f.read_text() for f in fixtures)
    assert "authorization" not in fixtures[0].read_text().lower()
    recorded = _evidence(proj, "caller", "t3")["answers"]
    assert "models that answered:" in r.out and "gpt-4o-mini" in r.out

    # the same eval in t2 replays the fixtures: no key, no upstream, same answers
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('tier = "t3"', 'tier = "t2"'))
    r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
    assert r.code == 0, r.output
    seen = _evidence(proj, "caller", "t2")
    assert seen["answers"] == recorded
    assert seen["key"] == "evalrun-placeholder-not-a-key"
    models = proj.eval_result("caller", "t2")["models"]
    assert models["mode"] == "replay" and models["calls"] == 2 and models["models"]
    assert SECRET not in r.output + (proj.root / ".evalrun/results/t2.json").read_text()


def test_t2_missing_fixture_fails_even_when_the_code_swallowed_the_error(project) -> None:
    proj = model_project(project, extra='env = { TOLERATE = "1" }')
    r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
    assert r.code == 1, r.output
    res = proj.eval_result("caller", "t2")
    assert res["status"] == "failed"
    assert "fixtures/caller/0001.json" in res["message"]


def test_t2_never_makes_a_live_call_even_with_a_real_key(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(
            project, extra='env = { TOLERATE = "1" }', tier_table=f'[models]\nupstream = "{upstream.url}"\n\n'
        )
        r = proj.run("t2", env={"OPENAI_API_KEY": SECRET})
        assert upstream.requests == []
    assert r.code == 1, r.output  # the scorer ran and asked: no fixture, no live call
    assert _evidence(proj, "caller", "t2")["answers"][0].startswith("error")


def test_budget_exhausted_is_not_checked_not_failed(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(
            project,
            tier="t3",
            evals=("a-first", "b-second", "c-third"),
            extra='env = { CALLS = "2" }',
            tier_table=f'[tiers.t3]\nbudget = {{ calls = 3 }}\n\n[models]\nupstream = "{upstream.url}"\n\n',
        )
        r = proj.run("t3", "-j", "1", env={"OPENAI_API_KEY": SECRET})
        assert len(upstream.requests) == 3
    assert r.code == 4, r.output
    statuses = {e["name"]: e["status"] for e in proj.results("t3")["evals"]}
    assert statuses == {"a-first": "passed", "b-second": "budget", "c-third": "budget"}
    assert proj.eval_result("c-third", "t3")["message"].startswith("not checked: budget exhausted")
    assert "0 failed" in r.out


def test_record_outside_t3_is_a_usage_error(project) -> None:
    proj = model_project(project)
    r = proj.run("t2", "--record")
    assert r.code == 2 and "--record: only t3" in r.err


def test_unplayed_fixtures_are_reported_and_fail_under_strict_replay(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(project, tier="t3", extra='env = { CALLS = "2" }', tier_table=f'[models]\nupstream = "{upstream.url}"\n\n')
        assert proj.run("t3", "--record", env={"OPENAI_API_KEY": SECRET}).code == 0
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('tier = "t3"', 'tier = "t2"').replace('CALLS = "2"', 'CALLS = "1"'))
    r = proj.run("t2")
    assert r.code == 0, r.output
    note = proj.eval_result("caller", "t2")["message"]
    assert note.startswith("note: ") and "0002.json" in note and "not requested" in note
    manifest.write_text(manifest.read_text().replace(f'upstream = "{upstream.url}"', f'upstream = "{upstream.url}"\nstrict_replay = true'))
    r = proj.run("t2")
    assert r.code == 1, r.output
    assert "0002.json" in proj.eval_result("caller", "t2")["message"]


def test_fixtures_for_must_name_an_eval_of_the_manifest(project) -> None:
    proj = model_project(project, tier="t3", extra='fixtures_for = "nobody"')
    r = proj.run("t3")
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        'evalrun: error: manifest.toml: evals[0] ("caller").fixtures_for: no eval is named \'nobody\'; '
        "name the eval whose fixtures this one records"
    ]
    # fixtures_for on an eval whose calls do not go through evalrun would record nothing: refused, by check too
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('model = true\nfixtures_for = "nobody"', 'fixtures_for = "caller"'))
    r = proj.run("check")
    assert r.code == 2, r.output
    assert r.err.strip().splitlines() == [
        'evalrun: error: manifest.toml: evals[0] ("caller").fixtures_for: its model calls do not go through evalrun, '
        "so it records no fixtures; add model = true (or [tiers.t3] model = true), or remove fixtures_for"
    ]
