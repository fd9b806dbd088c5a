"""judge() and model cost through the real CLI: record in t3, replay in t2, refuse in t1, price and cap.

The code under test calls a fake upstream on 127.0.0.1 (tests/harness/fakes_upstream.py)
with the real openai SDK; the scorer's ``c.judge`` asks the same upstream for a
verdict through evalrun's proxy (tests/scorers/judge_calls.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness import SCORERS, an_eval, manifest, replayed_pair
from harness.fakes_upstream import OPENAI_MODEL, FakeUpstream

KEY = "sk-test-judge-" + os.urandom(8).hex()
SCORER = (SCORERS / "judge_calls.py").read_text()
PASSING = json.dumps({"pass": True, "reason": "It repeats hello, as the rubric asks."})
NEEDS_MODEL = "judge() needs a model: t2 replays one, t3 calls one"
JUDGED = "the first answer is judged"


def judged_manifest(upstream: str, prices: dict | None = None, t3_budget: dict | None = None) -> str:
    """The judged scorer as judge-only in t1, replayed in t2 and live in t3; ``prices`` [models.prices]."""
    full = ["python", "score.py", "full"]
    return manifest(
        an_eval("judged-static", ["python", "score.py", "judge-only"], dir="evals/j"),
        *replayed_pair("judged", full, dir="evals/j"),
        tiers={"t1": {}, "t2": {}, "t3": {"budget": t3_budget} if t3_budget else {}},
        models={"upstream": upstream, "judge": "gpt-4o-mini", "strict_replay": True, **({"prices": prices} if prices else {})},
    ).text


PRICES = {"gpt-4o-mini": {"input": 1000.0, "output": 2000.0}}


def check(result: dict, name: str) -> dict:
    return next(c for c in result["checks"] if c["name"] == name)


# One worker runs the tests of the recorded suite (a module fixture), so it is made once, not once per
# worker; the module's other tests are free to run on any worker.
SHARED = pytest.mark.xdist_group("judge-cli")


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """Recorded in t3 against the fake upstream, then replayed in t2 with the upstream stopped."""
    from harness import Project

    proj = Project(tmp_path_factory.mktemp("judge"))
    with FakeUpstream(scripted=True, verdict=PASSING) as upstream:
        proj.write({"manifest.toml": judged_manifest(upstream.url, PRICES), "evals/j/score.py": SCORER})
        recorded = proj.run("t3", "--record", env={"OPENAI_API_KEY": KEY}, timeout=300)
        received = list(upstream.requests)
    replayed = proj.run("t2", env={"OPENAI_API_KEY": ""}, timeout=300)
    return proj, recorded, replayed, received


@SHARED
def test_a_judge_check_records_in_t3_and_passes_in_t2_replay_with_its_reason_as_evidence(suite):
    proj, recorded, replayed, received = suite
    assert recorded.code == 0, recorded.output
    assert replayed.code == 0, replayed.output
    result = proj.eval_result("judged", "t2")
    assert result["status"] == "passed", result
    judged = check(result, JUDGED)
    assert judged["passed"] and judged["assertions"] == 1
    assert "It repeats hello, as the rubric asks." in judged["evidence"]
    # The judge call asked the manifest's judge model at temperature 0 for a JSON schema verdict.
    asked = [r.body for r in received if r.body.get("response_format")]
    assert len(asked) == 1
    assert asked[0]["model"] == "gpt-4o-mini" and asked[0]["temperature"] == 0
    assert asked[0]["response_format"]["type"] == "json_schema"
    assert "SUBJECT:\nanswer 1: hello" in asked[0]["messages"][1]["content"]


@SHARED
def test_the_judge_session_does_not_shift_the_code_under_tests_call_indexes(suite):
    proj = suite[0]
    fixtures = proj.root / "evals" / "j" / "fixtures"
    assert sorted(f.relative_to(fixtures).as_posix() for f in fixtures.rglob("*.json")) == [
        "judge/0001.json", "judged/0001.json", "judged/0002.json",
    ]

    def prompt(rel: str) -> str:
        return json.loads((fixtures / rel).read_text())["request"]["body"]["messages"][-1]["content"]

    # The judge was asked between "hello" and "goodbye"; the second call is still index 2.
    assert prompt("judged/0001.json") == "hello" and prompt("judged/0002.json") == "goodbye"
    assert "response_format" in json.loads((fixtures / "judge/0001.json").read_text())["request"]["body"]


@SHARED
def test_which_model_answered_lists_the_judge_apart(suite):
    proj, _, replayed, _ = suite
    models = proj.eval_result("judged", "t2")["models"]
    assert models["calls"] == 3
    assert models["judge"] == {"calls": 1, "models": [OPENAI_MODEL]}
    assert f"judge: {OPENAI_MODEL}, 1 call" in replayed.output


@SHARED
def test_cost_is_reported_per_eval_and_per_run_from_the_manifest_prices(suite):
    proj, _, replayed, _ = suite
    results = proj.results("t2")
    tokens = proj.eval_result("judged", "t2")["models"]["tokens"]
    expected = (tokens["input"] * 1000.0 + tokens["output"] * 2000.0) / 1_000_000
    assert tokens["input"] > 0 and tokens["output"] > 0
    cost = proj.eval_result("judged", "t2")["models"]["cost"]
    assert cost["usd"] == pytest.approx(expected) and cost["unpriced_calls"] == 0
    assert results["cost"]["usd"] == pytest.approx(expected)
    assert f"cost: ${expected:.4f}" in replayed.output


def test_a_judge_check_fails_loudly_in_t1_without_any_request(project):
    with FakeUpstream(verdict=PASSING) as upstream:
        proj = project({"manifest.toml": judged_manifest(upstream.url), "evals/j/score.py": SCORER})
        run = proj.run("t1", timeout=120)
        # Even pointed straight at a live model, a t1 scorer's judge() sends nothing.
        report = proj.root / "direct.json"
        env = {**proj.env(), "EVALRUN_TIER": "t1", "EVALRUN_MODEL_URL": upstream.url,
               "EVALRUN_JUDGE_MODEL": "gpt-4o-mini", "EVALRUN_REPORT": str(report)}
        done = subprocess.run([sys.executable, "score.py", "judge-only"], cwd=proj.root / "evals" / "j",
                              env=env, capture_output=True, text=True, timeout=60)
        assert upstream.requests == []
    assert run.code == 1, run.output
    result = proj.eval_result("judged-static", "t1")
    assert result["status"] == "failed"
    judged = check(result, JUDGED)
    assert not judged["passed"] and judged["message"] == NEEDS_MODEL
    assert NEEDS_MODEL in run.output
    assert done.returncode == 0, done.stderr
    direct = json.loads(report.read_text())["checks"][0]
    assert (direct["passed"], direct["message"]) == (False, NEEDS_MODEL)


def test_a_reply_that_is_no_verdict_fails_the_check_with_the_raw_reply_redacted(project):
    with FakeUpstream(scripted=True, verdict="I would rather not grade this (auth seen: {auth})") as upstream:
        proj = project({"manifest.toml": judged_manifest(upstream.url), "evals/j/score.py": SCORER})
        run = proj.run("t3", env={"OPENAI_API_KEY": KEY}, timeout=120)
    assert run.code == 1, run.output
    judged = check(proj.eval_result("judged-live", "t3"), JUDGED)
    assert not judged["passed"]
    assert judged["message"] == 'judge(): the reply is not a verdict {"pass": true|false, "reason": "..."}'
    assert "I would rather not grade this (auth seen: Bearer " in judged["evidence"]
    assert KEY not in judged["evidence"] and KEY not in run.output
    assert KEY not in (proj.root / ".evalrun" / "results" / "t3.json").read_text()


def test_a_failing_verdict_fails_the_check_with_its_reason(project):
    verdict = json.dumps({"pass": False, "reason": "It says goodbye, not hello."})
    with FakeUpstream(scripted=True, verdict=verdict) as upstream:
        proj = project({"manifest.toml": judged_manifest(upstream.url), "evals/j/score.py": SCORER})
        run = proj.run("t3", env={"OPENAI_API_KEY": KEY}, timeout=120)
    assert run.code == 1, run.output
    judged = check(proj.eval_result("judged-live", "t3"), JUDGED)
    assert not judged["passed"] and judged["assertions"] == 1
    assert judged["message"] == "judge: fails the rubric: It says goodbye, not hello."


def test_a_usd_budget_stops_the_eval_with_status_budget(project):
    # 18 tokens a call at $1000/$2000 per million: the first call costs ~$0.025, over the $0.01 cap.
    with FakeUpstream(scripted=True, verdict=PASSING) as upstream:
        proj = project({
            "manifest.toml": judged_manifest(upstream.url, PRICES, t3_budget={"usd": 0.01}),
            "evals/j/score.py": SCORER,
        })
        run = proj.run("t3", env={"OPENAI_API_KEY": KEY}, timeout=120)
        sent = len(upstream.requests)
    result = proj.eval_result("judged-live", "t3")
    assert result["status"] == "budget", result
    assert "not checked: budget exhausted" in result["message"] and "of $0.01 used" in result["message"]
    assert sent == 1  # the judge call and the second call were refused by the proxy
    assert result["models"]["cost"]["usd"] > 0.01
    assert "budget" in run.output


def test_an_unpriced_model_under_a_usd_budget_is_noted_loudly_never_free(project):
    with FakeUpstream(scripted=True, verdict=PASSING) as upstream:
        proj = project({
            "manifest.toml": judged_manifest(
                upstream.url, {"claude-3-5-haiku": {"input": 0.8, "output": 4.0}}, t3_budget={"usd": 5.0},
            ),
            "evals/j/score.py": SCORER,
        })
        run = proj.run("t3", env={"OPENAI_API_KEY": KEY}, timeout=120)
    assert run.code == 0, run.output
    result = proj.eval_result("judged-live", "t3")
    assert result["status"] == "passed"
    assert result["models"]["cost"] == {"usd": 0.0, "unpriced_calls": 3, "unpriced_models": [OPENAI_MODEL]}
    assert f"note: usd budget cannot count 3 unpriced calls ({OPENAI_MODEL}: no price in [models.prices])" in result["message"]
    assert proj.results("t3")["cost"]["unpriced_calls"] == 3
    assert f"cost: $0.0000 + 3 unpriced calls ({OPENAI_MODEL}" in run.output


def test_without_prices_or_a_usd_budget_no_cost_is_claimed(project):
    with FakeUpstream(scripted=True, verdict=PASSING) as upstream:
        proj = project({"manifest.toml": judged_manifest(upstream.url), "evals/j/score.py": SCORER})
        run = proj.run("t3", env={"OPENAI_API_KEY": KEY}, timeout=120)
    assert run.code == 0, run.output
    assert "cost" not in proj.eval_result("judged-live", "t3")["models"]
    assert proj.results("t3")["cost"] is None and "cost:" not in run.output
