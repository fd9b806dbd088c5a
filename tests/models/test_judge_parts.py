"""The parts of judge() and cost that parse or decide: the verdict parser, prices, the usd meter, the manifest.

Through the CLI they are tested in tests/cli/test_judge_cli.py; here are the
property tests every parser keeps, and the one-line manifest errors.
"""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.manifest import Budget, Price
from evalrun.models.cost import call_cost, price_for, run_cost
from evalrun.models.replay.budget import BudgetMeter
from evalrun.reports_out.describe import describe_cost
from evalrun.scorer import judging
from harness import an_eval, manifest

SECRET = "sk-test-parts-0123456789abcdef"
ENV = {"OPENAI_API_KEY": SECRET, "EVALRUN_TIER": "t2"}


def completion(content: object) -> str:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000))
def test_any_reply_is_a_verdict_or_a_problem_with_a_bounded_raw_reply(raw: str) -> None:
    outcome = judging.parse_reply(raw, ENV)
    if outcome.problem is None:
        assert isinstance(outcome.passed, bool) and outcome.reason.strip()
    else:
        assert len(outcome.raw) <= judging.RAW_SHOWN


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=2500), st.text(alphabet=string.ascii_letters, max_size=50))
def test_a_secret_in_an_unusable_reply_is_removed_before_the_reply_is_cut(pad: int, tail: str) -> None:
    raw = "x" * pad + SECRET + tail
    outcome = judging.parse_reply(raw, ENV)
    assert outcome.problem is not None
    assert SECRET[:12] not in outcome.raw  # not even the part left before the cut


@given(st.booleans(), st.text(min_size=1, max_size=200).filter(str.strip))
def test_a_valid_verdict_is_read_whole(passed: bool, reason: str) -> None:
    outcome = judging.parse_reply(completion(json.dumps({"pass": passed, "reason": reason})), {})
    assert (outcome.problem, outcome.passed) == (None, passed)
    assert outcome.reason == (reason if len(reason) <= judging.RAW_SHOWN else outcome.reason)


@pytest.mark.parametrize("content", [
    "yes", json.dumps({"pass": "true", "reason": "x"}), json.dumps({"pass": True}),
    json.dumps({"pass": True, "reason": "  "}), json.dumps([True, "x"]), None, 42,
])
def test_what_is_not_a_verdict_is_a_problem(content: object) -> None:
    assert judging.parse_reply(completion(content), {}).problem is not None


def test_t1_is_refused_before_anything_else_is_read() -> None:
    outcome = judging.ask("s", "r", None, "m", {"EVALRUN_TIER": "t1", "EVALRUN_MODEL_URL": "http://127.0.0.1:1"})
    assert outcome.problem == judging.NEEDS_MODEL


def test_an_eval_without_a_model_endpoint_or_model_name_is_told_which() -> None:
    no_model = judging.ask("s", "r", None, "m", {"EVALRUN_TIER": "t2", "EVALRUN_MODEL_URL": judging.T1_MODEL_URL})
    assert "set model = true" in (no_model.problem or "")
    no_name = judging.ask("s", "r", None, None, {"EVALRUN_TIER": "t2", "EVALRUN_MODEL_URL": "http://127.0.0.1:1/x"})
    assert '[models] judge = "..."' in (no_name.problem or "")


PRICES = {"gpt-4o-mini": Price(input=0.15, output=0.6), "gpt-4o": Price(input=2.5, output=10.0)}


def test_a_model_is_priced_by_its_name_or_the_longest_name_it_extends() -> None:
    assert price_for(PRICES, "gpt-4o") is PRICES["gpt-4o"]
    assert price_for(PRICES, "gpt-4o-mini-2024-07-18") is PRICES["gpt-4o-mini"]
    assert price_for(PRICES, "gpt-4o-2024-08-06") is PRICES["gpt-4o"]
    assert price_for(PRICES, "gpt-4omni") is None and price_for(PRICES, "claude-3-5-haiku") is None
    assert call_cost(PRICES, {"gpt-4o-mini-2024-07-18"}, 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert call_cost(PRICES, set(), 10, 10) is None and call_cost(PRICES, {"x"}, 10, 10) is None


@given(st.lists(st.one_of(st.none(), st.fixed_dictionaries({
    "usd": st.floats(min_value=0, max_value=100), "unpriced_calls": st.integers(0, 50),
    "unpriced_models": st.lists(st.sampled_from(["a", "b"]), max_size=2)}).map(lambda c: {"cost": c})), max_size=6))
def test_the_run_cost_adds_its_evals_and_never_calls_unpriced_free(records: list) -> None:
    total = run_cost(records)
    costs = [r["cost"] for r in records if r]
    if not costs:
        assert total is None
        return
    assert total["usd"] == pytest.approx(sum(c["usd"] for c in costs))
    assert total["unpriced_calls"] == sum(c["unpriced_calls"] for c in costs)
    if total["unpriced_calls"]:
        assert "unpriced call" in describe_cost(total)


def test_the_usd_meter_refuses_once_the_cap_is_reached() -> None:
    meter = BudgetMeter(Budget(usd=0.5), "b")
    assert meter.acquire() is None
    meter.add_usd(0.3)
    assert meter.acquire() is None
    meter.add_usd(0.3)
    assert meter.acquire() == "b exhausted: $0.6000 of $0.5 used"


@pytest.mark.parametrize(("models", "place"), [
    ("[models.prices]\n\"m\" = { input = -1, output = 1 }\n", "models.prices.m.input"),
    ("[models.prices]\n\"m\" = { input = 1 }\n", "models.prices.m.output"),
    ("[models]\njudge = \"\"\n", "models.judge"),
])
def test_a_bad_price_or_judge_is_one_line_exit_2(project, models: str, place: str) -> None:
    proj = project({"manifest.toml": models, "evals/x/score.py": ""})
    run = proj.run("dry")
    assert run.code == 2, run.output
    assert "manifest.toml" in run.err and place in run.err
    assert len(run.err.strip().splitlines()) == 1


def test_a_usd_budget_of_zero_is_one_line_exit_2(project) -> None:
    proj = project({"manifest.toml": "[tiers.t3]\nbudget = { usd = 0 }\n"})
    run = proj.run("dry")
    assert run.code == 2 and "tiers.t3.budget.usd" in run.err, run.output


def test_merged_shards_add_their_evals_costs(tmp_path) -> None:
    from evalrun.manifest import load_manifest
    from evalrun.merge import merge_results
    from evalrun.results import EvalResult, RunResults, Status, write_results

    (tmp_path / "manifest.toml").write_text(
        manifest(*(an_eval(n, ["python", "s.py"], tier="t3", dir="e", model=True) for n in "ab")).text)
    (tmp_path / "e").mkdir()
    paths = []
    for index, name in enumerate("ab", start=1):
        cost = {"usd": 0.25 * index, "unpriced_calls": index - 1, "unpriced_models": ["x"] if index == 2 else []}
        results = RunResults(
            evalrun_version="0.1.0", tier="t3", manifest="manifest.toml", started_at="2026-01-01T00:00:00+00:00",
            finished_at="2026-01-01T00:01:00+00:00", selection={"evals": [], "tags": [], "shard": [f"{index}/2"]},
            evals=[EvalResult(name=name, tier="t3", dir="e", status=Status.PASSED, models={"calls": 1, "cost": cost})],
        )
        paths.append(tmp_path / f"{index}.json")
        write_results(results, paths[-1])
    merged = merge_results(paths, load_manifest(tmp_path / "manifest.toml"), "t3")
    assert merged.cost == {"usd": pytest.approx(0.75), "unpriced_calls": 1, "unpriced_models": ["x"]}
