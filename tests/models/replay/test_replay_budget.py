"""Budgets: the proxy refuses calls past a cap of calls or tokens, with a distinct error."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.manifest import Budget
from evalrun.models.replay.budget import BudgetMeter
from evalrun.models.replay.proxy import ReplayProxy

from harness.fakes_upstream import FakeUpstream

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}  # the fake reports 18 tokens


@pytest.fixture
def upstream():
    with FakeUpstream() as fake:
        yield fake


CLIENT = httpx.Client(timeout=10, trust_env=False)  # one client: making one per call costs ~50 ms


def chat(base: str) -> httpx.Response:
    return CLIENT.post(f"{base}/v1/chat/completions", json=CHAT)


@pytest.mark.parametrize(
    ("budget", "allowed", "reason"),
    [
        (Budget(calls=2), 2, "model budget exhausted: 2 of 2 calls used"),
        (Budget(tokens=30), 2, "model budget exhausted: 36 of 30 tokens used"),  # the crossing call completes
        (Budget(calls=5, tokens=18), 1, "model budget exhausted: 18 of 18 tokens used"),
    ],
    ids=["calls", "tokens", "first-cap-wins"],
)
def test_calls_past_the_budget_are_refused_with_a_distinct_error(upstream, budget, allowed, reason):
    with ReplayProxy("live", upstream=upstream.url, budget=budget) as proxy:
        base = proxy.register_eval("spend", None)
        answers = [chat(base) for _ in range(allowed + 2)]
        report = proxy.eval_report("spend")
        assert proxy.budget_exhausted()
    assert [a.status_code for a in answers] == [200] * allowed + [402, 402]
    refusal = answers[-1].json()["error"]
    assert refusal["type"] == "evalrun_budget_exhausted"
    assert reason in refusal["message"] and "not checked" in refusal["message"]
    assert len(upstream.requests) == allowed  # refused calls never reach the model
    assert report.calls == allowed and report.budget_hit
    assert report.failures() == []  # a tripped cap is not blamed on the model


def test_an_eval_that_did_not_hit_the_budget_is_not_marked(upstream):
    with ReplayProxy("live", upstream=upstream.url, budget=Budget(calls=1)) as proxy:
        first = proxy.register_eval("first", None)
        second = proxy.register_eval("second", None)
        assert chat(first).status_code == 200
        assert chat(second).status_code == 402
        assert not proxy.eval_report("first").budget_hit
        assert proxy.eval_report("second").budget_hit


def test_a_per_eval_budget_caps_that_eval_only(upstream):
    with ReplayProxy("live", upstream=upstream.url) as proxy:
        capped = proxy.register_eval("capped", None, budget=Budget(calls=1))
        free = proxy.register_eval("free", None)
        assert [chat(capped).status_code for _ in range(2)] == [200, 402]
        assert [chat(free).status_code for _ in range(3)] == [200, 200, 200]
        assert "eval 'capped' budget exhausted: 1 of 1 calls used" in proxy.eval_report("capped").budget_message
        assert not proxy.budget_exhausted()


def test_parallel_calls_cannot_overshoot_a_calls_budget(upstream):
    with ReplayProxy("live", upstream=upstream.url, budget=Budget(calls=5)) as proxy:
        base = proxy.register_eval("race", None)
        statuses: list[int] = []
        threads = [threading.Thread(target=lambda: statuses.append(chat(base).status_code)) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(statuses) == [200] * 5 + [402] * 11
    assert len(upstream.requests) == 5


def test_the_budget_counts_replayed_calls_from_their_fixtures(upstream, tmp_path):
    with ReplayProxy("record", upstream=upstream.url) as proxy:
        base = proxy.register_eval("r", tmp_path)
        for _ in range(3):
            chat(base)
    with ReplayProxy("replay", budget=Budget(tokens=20)) as proxy:
        base = proxy.register_eval("r", tmp_path)
        assert [chat(base).status_code for _ in range(3)] == [200, 200, 402]


def test_a_call_that_never_reached_a_model_gives_its_slot_back():
    with ReplayProxy("live", upstream="http://127.0.0.1:9", budget=Budget(calls=1)) as proxy:
        base = proxy.register_eval("down", None)
        assert [chat(base).status_code for _ in range(2)] == [424, 424]
        assert not proxy.budget_exhausted()


def test_budget_meter_without_limits_never_refuses():
    meter = BudgetMeter(None)
    for _ in range(1000):
        assert meter.acquire() is None
    meter.add_tokens(10**9)
    assert not meter.exhausted() and meter.calls == 1000


def test_an_experiment_budget_is_shared_by_its_evals_and_leaves_other_columns_alone(upstream):
    with ReplayProxy("live", upstream=upstream.url) as proxy:
        first = proxy.register_eval("a[cheap]", None, column="cheap", column_budget=Budget(tokens=18))
        second = proxy.register_eval("b[cheap]", None, column="cheap", column_budget=Budget(tokens=18))
        other = proxy.register_eval("a[rich]", None, column="rich", column_budget=None)
        assert chat(first).status_code == 200  # 18 tokens: the column's cap is reached
        refused = chat(second)  # another eval of the same column: its calls count against the same cap
        assert refused.status_code == 402
        assert "experiment 'cheap' budget exhausted: 18 of 18 tokens used" in refused.json()["error"]["message"]
        assert chat(other).status_code == 200
        assert proxy.budget_exhausted("cheap") and not proxy.budget_exhausted("rich") and not proxy.budget_exhausted()
        assert proxy.eval_report("b[cheap]").budget_hit and not proxy.eval_report("a[rich]").budget_hit
    assert len(upstream.requests) == 2


def _streamed_chats(base: str, prompts: list[str]) -> list[object]:
    """Streamed chat calls through the real openai SDK, as written in its docs: ``stream=True``, no
    ``stream_options``. Each call's chunks as the client saw them, or the error it got."""
    import openai

    client = openai.OpenAI(base_url=f"{base}/v1", api_key="sk-test", max_retries=0,
                           http_client=httpx.Client(trust_env=False))
    seen: list[object] = []
    for prompt in prompts:
        try:
            stream = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}], stream=True
            )
            seen.append([(chunk.choices[0].delta.content, chunk.usage) for chunk in stream])  # [0]: as careless code does
        except openai.APIStatusError as exc:
            seen.append(exc.status_code)
    return seen


def test_streams_without_usage_are_counted_by_asking_for_it_and_a_token_cap_holds():
    # The upstream reports a stream's usage only when asked, as OpenAI's does; each call is 200 tokens.
    with FakeUpstream(stream_usage="asked", stream_tokens=(150, 50)) as fake, \
            ReplayProxy("live", upstream=fake.url, budget=Budget(tokens=300)) as proxy:
        base = proxy.register_eval("s", None)
        seen = _streamed_chats(base, ["one", "two", "three"])
        report = proxy.eval_report("s")
    # The cap holds: the call that crosses it completes, the one after it is refused.
    assert seen[2] == 402, seen
    assert report.total_tokens == 400 and report.calls == 2 and report.budget_hit
    # The client, which did not ask for usage, never gets the usage chunk (chunk.choices[0] never fails).
    assert all(usage is None for chunks in seen[:2] for _, usage in chunks), seen
    assert "".join(text or "" for text, _ in seen[0]).startswith("echo: one")
    assert all(r.body["stream_options"] == {"include_usage": True} for r in fake.requests)


def test_a_stream_recorded_with_the_usage_the_proxy_asked_for_replays_as_the_client_saw_it(tmp_path):
    with FakeUpstream(stream_usage="asked", stream_tokens=(150, 50)) as fake, \
            ReplayProxy("record", upstream=fake.url) as proxy:
        base = proxy.register_eval("s", tmp_path)
        recorded = _streamed_chats(base, ["one"])
        assert proxy.eval_report("s").total_tokens == 200
    fixture = (tmp_path / "s" / "0001.json").read_text()
    assert '"include_usage"' not in fixture.split('"response"')[0]  # the request as the client sent it
    with ReplayProxy("replay") as proxy:
        base = proxy.register_eval("s", tmp_path)
        replayed = _streamed_chats(base, ["one"])
        report = proxy.eval_report("s")
    assert replayed == recorded and report.failures() == []
    assert report.total_tokens == 200  # t2 counts what the recorded answer cost


def test_a_stream_that_reports_no_usage_even_when_asked_is_uncounted_and_said_so_never_free():
    with FakeUpstream(stream_usage="never") as fake, ReplayProxy("live", upstream=fake.url) as proxy:
        base = proxy.register_eval("s", None)
        seen = _streamed_chats(base, ["one", "two"])
        report = proxy.eval_report("s")
    assert all(isinstance(chunks, list) for chunks in seen), seen
    assert report.calls == 2 and report.total_tokens == 0
    assert report.uncounted_calls == 2 and report.as_record()["uncounted_calls"] == 2


def test_a_server_that_refuses_stream_options_gets_the_call_as_the_client_made_it_and_it_is_uncounted(tmp_path):
    with FakeUpstream(stream_usage="refused") as fake, ReplayProxy("record", upstream=fake.url) as proxy:
        base = proxy.register_eval("s", tmp_path)
        seen = _streamed_chats(base, ["one", "two"])
        report = proxy.eval_report("s")
    assert all(isinstance(chunks, list) and chunks for chunks in seen), seen  # answered, as without evalrun
    assert ["stream_options" in r.body for r in fake.requests] == [True, False, True, False]
    assert report.calls == 2 and report.uncounted_calls == 2 and report.failures() == []
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == ["0001.json", "0002.json"]  # the 400s are no calls


def _events_text(usage: bool) -> str:
    from harness.fakes_upstream import _openai_events

    return "".join(_openai_events("héllo, wörld: a streamed answer", usage=usage))


@given(cuts=st.lists(st.integers(min_value=0, max_value=len(_events_text(True).encode())), max_size=12),
       crlf=st.booleans())
def test_the_usage_chunk_is_kept_back_however_the_stream_is_cut_into_pieces(cuts, crlf):
    from evalrun.models.replay.usage import UsageChunks

    whole, expected = _events_text(True), _events_text(False)
    if crlf:
        whole, expected = whole.replace("\n", "\r\n"), expected.replace("\n", "\r\n")
    data = whole.encode()
    bounds = sorted({0, len(data), *(min(c, len(data)) for c in cuts)})
    kept = UsageChunks()
    out = b"".join(kept.feed(data[a:b]) for a, b in zip(bounds, bounds[1:])) + kept.flush()
    assert out.decode() == expected


@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_asking_for_usage_never_fails_on_any_body(body):
    from evalrun.models.replay.usage import ask_for_usage

    asked = ask_for_usage(body)
    assert asked is None or json.loads(asked)["stream_options"]["include_usage"] is True


@pytest.mark.parametrize(
    ("body", "asked"),
    [
        ({"stream": True}, {"stream": True, "stream_options": {"include_usage": True}}),
        ({"stream": True, "stream_options": {"include_obfuscation": False}},
         {"stream": True, "stream_options": {"include_obfuscation": False, "include_usage": True}}),
        ({"stream": True, "stream_options": {"include_usage": True}}, None),
        ({"stream": False}, None),
        ({"stream": True, "stream_options": "bad"}, None),
    ],
)
def test_usage_is_asked_for_only_where_a_stream_does_not_ask_keeping_its_other_options(body, asked):
    from evalrun.models.replay.usage import ask_for_usage

    result = ask_for_usage(json.dumps(body).encode())
    assert (json.loads(result) if result is not None else None) == asked
