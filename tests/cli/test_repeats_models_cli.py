"""Repeats of evals that call models: each run its own proxy session (record and replay per run), budgets exact."""

from __future__ import annotations

import json

from harness.fakes_upstream import FakeUpstream
from harness.model_projects import SECRET, model_project


def test_each_repeat_records_and_replays_its_own_session(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(project, tier="t3", tier_table=f'[models]\nupstream = "{upstream.url}"\n\n')
        r = proj.run("t3", "--record", "--repeat", "3", "-j", "2", env={"OPENAI_API_KEY": SECRET})
        assert r.code == 0, r.output
        assert len(upstream.requests) == 3  # one call per run, none shared
    fixtures = proj.root / "evals" / "caller" / "fixtures"
    # run 0 keeps the eval's own session, so fixtures recorded without repeats still replay
    assert sorted(p.parent.name + "/" + p.name for p in fixtures.glob("*/*.json")) == [
        "caller.r1/0001.json", "caller.r2/0001.json", "caller/0001.json"
    ]
    assert proj.eval_result("caller", "t3")["models"]["calls"] == 3

    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('tier = "t3"', 'tier = "t2"'))
    r = proj.run("t2", "--repeat", "3", "-j", "2")
    assert r.code == 0, r.output
    result = proj.eval_result("caller", "t2")
    assert result["models"]["mode"] == "replay" and result["models"]["calls"] == 3
    assert result["message"] is None  # every run played exactly its own fixtures: nothing unplayed

    # a fourth run has nothing recorded: it fails naming the fixture it needed, never replaying another run's
    manifest.write_text(manifest.read_text().replace("model = true", 'model = true\nenv = { TOLERATE = "1" }'))
    r = proj.run("t2", "--repeat", "4", "-j", "2")
    assert r.code == 1, r.output
    result = proj.eval_result("caller", "t2")
    assert result["message"].startswith("run 4 of 4: ") and "fixtures/caller.r3/0001.json" in result["message"]


def test_a_budget_that_runs_out_mid_repeats_leaves_partial_rates_not_compared(project) -> None:
    with FakeUpstream() as upstream:
        proj = model_project(
            project,
            tier="t3",
            extra="repeat = 5",
            tier_table=f'[tiers.t3]\nbudget = {{ calls = 3 }}\n\n[models]\nupstream = "{upstream.url}"\n\n',
        )
        proj.write({"baselines/t3.toml": '[caller]\n"the model answered" = { assertions = 1, passes = 5, runs = 5 }\n'})
        r = proj.run("t3", "-j", "1", env={"OPENAI_API_KEY": SECRET})
        assert len(upstream.requests) == 3
    assert r.code == 4, r.output
    result = proj.eval_result("caller", "t3")
    assert result["status"] == "budget"
    assert result["repeats"]["partial"] is True and result["repeats"]["runs"] == 3
    assert result["checks"][0]["rate"]["passes"] == 3 and result["checks"][0]["rate"]["runs"] == 3
    assert "rates are partial" in result["message"]
    comparison = proj.results("t3")["baseline"]
    assert comparison["regressions"] == [] and "caller" in comparison["not_compared"]
    assert json.dumps(proj.results("t3")).count(SECRET) == 0
