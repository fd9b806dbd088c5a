"""The repository's own subject, evals/agent: its scorer passes on replay, and t1 leaves it no model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalrun.models.scorer_env import scrub_environment
from evalrun.secrets import PLACEHOLDER
from evalrun.models.replay.proxy import ReplayProxy

from harness import REPO

AGENT = REPO / "evals" / "agent"
FIXTURES = AGENT / "fixtures"
REAL_KEY = "sk-proj-REAL-LOOKING-KEY-ON-THIS-MACHINE-42"
NO_PYCACHE = {"PYTHONDONTWRITEBYTECODE": "1"}  # leave no __pycache__ in the committed eval folder


def evalrun_env() -> dict[str, str]:
    """evalrun's own environment on a machine that holds a real key."""
    return {**os.environ, "OPENAI_API_KEY": REAL_KEY}


def run_scorer(env: dict[str, str], report: Path) -> dict[str, object]:
    env = {
        **env, "EVALRUN_REPORT": str(report), "EVALRUN_EVAL": "agent", "EVALRUN_TIER": "t2",
        "EVALRUN_JUDGE_MODEL": "gpt-4o-mini", **NO_PYCACHE,
    }
    done = subprocess.run([sys.executable, "score.py"], cwd=AGENT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(report.read_text())


def test_the_agent_scorer_passes_on_replay_over_the_committed_fixtures(tmp_path):
    with ReplayProxy("replay") as proxy:
        base = proxy.register_eval("agent", FIXTURES)
        report = run_scorer(scrub_environment(evalrun_env(), "t2", base), tmp_path / "report.json")
        usage = proxy.eval_report("agent")
    checks = report["checks"]
    assert len(checks) == 7
    assert all(c["passed"] for c in checks), [c for c in checks if not c["passed"]]
    assert {c["name"] for c in checks} >= {
        "trip-tokyo: dispatches the right tools with the right arguments",
        "trip-tokyo: the final answer uses the tool results",
        "trip-tokyo: the final answer is truthful about the tools' results",
    }
    assert usage.calls == 7 and usage.judge_calls == 1 and usage.models == ("gpt-4o-mini-2024-07-18",) and usage.provider == "openai"
    assert usage.total_tokens > 0
    assert usage.failures(strict_replay=True) == []


@pytest.mark.parametrize(("column", "model"), [("", "gpt-4o-mini-"), ("@mini", "gpt-4o-mini-"), ("@nano", "gpt-4.1-nano-")])
def test_the_committed_fixtures_look_like_real_chat_completions_and_hold_no_key(column, model):
    # The plain recording, and one per experiment of the repository's manifest (fixtures/@<experiment>).
    folder = FIXTURES / column if column else FIXTURES
    files = sorted(f for f in folder.rglob("*.json") if column or not f.relative_to(FIXTURES).as_posix().startswith("@"))
    assert [f.relative_to(folder).as_posix() for f in files] == sorted([
        f"{s}/000{n}.json" for s in ("convert-usd-eur", "trip-tokyo", "weather-paris") for n in (1, 2)
    ] + ["judge/0001.json"])
    for file in files:
        body = json.loads(file.read_text())["response"]["body"]
        judge = file.parent.name == "judge"  # the judge model is the manifest's, whatever the column
        assert body["object"] == "chat.completion" and body["model"].startswith("gpt-4o-mini-" if judge else model)
        assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]
        assert "authorization" not in file.read_text().lower()
    first = json.loads((folder / "trip-tokyo" / "0001.json").read_text())["response"]["body"]
    assert [c["function"]["name"] for c in first["choices"][0]["message"]["tool_calls"]] == [
        "get_weather", "convert_currency"
    ]


def test_the_committed_fixtures_are_what_recording_produces_today(tmp_path):
    done = subprocess.run(
        [sys.executable, "record_fixtures.py", str(tmp_path)],
        cwd=AGENT, env={**os.environ, **NO_PYCACHE}, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    fresh = {f.relative_to(tmp_path): f.read_text() for f in tmp_path.rglob("*.json")}
    committed = {f.relative_to(FIXTURES): f.read_text() for f in FIXTURES.rglob("*.json")}
    assert fresh == committed, "evals/agent/fixtures is stale: run `python evals/agent/record_fixtures.py` and commit"


def test_a_t1_scrubbed_environment_leaves_the_agent_no_model_to_reach():
    env = {**scrub_environment(evalrun_env(), "t1", None), **NO_PYCACHE}
    assert env["OPENAI_API_KEY"] == PLACEHOLDER
    done = subprocess.run(
        [sys.executable, "agent.py", "What's the weather in Paris right now?"],
        cwd=AGENT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 1
    assert "agent: cannot reach the model at http://127.0.0.1:4/evalrun-t1-has-no-model/v1" in done.stderr
    assert "Connection refused" in done.stderr
    assert REAL_KEY not in done.stdout + done.stderr


def test_a_missing_fixture_fails_that_task_and_is_named_even_though_the_scorer_swallowed_it(tmp_path):
    # Replay over a copy without trip-tokyo's answer: the agent's error is swallowed by the
    # scorer's own check, yet the proxy's report names the missing file for the verdict.
    fixtures = tmp_path / "fixtures"
    for file in FIXTURES.rglob("*.json"):
        if file.relative_to(FIXTURES).as_posix() != "trip-tokyo/0002.json":
            (fixtures / file.relative_to(FIXTURES)).parent.mkdir(parents=True, exist_ok=True)
            (fixtures / file.relative_to(FIXTURES)).write_text(file.read_text())
    with ReplayProxy("replay") as proxy:
        base = proxy.register_eval("agent", fixtures)
        report = run_scorer(scrub_environment(evalrun_env(), "t2", base), tmp_path / "report.json")
        usage = proxy.eval_report("agent")
    failed = [c["name"] for c in report["checks"] if not c["passed"]]
    assert failed == [
        "trip-tokyo: dispatches the right tools with the right arguments",
        "trip-tokyo: the final answer uses the tool results",
        "trip-tokyo: the final answer is truthful about the tools' results",  # never judged: the agent failed
    ]
    assert len(usage.missing) == 1 and str(fixtures / "trip-tokyo" / "0002.json") in usage.missing[0]
