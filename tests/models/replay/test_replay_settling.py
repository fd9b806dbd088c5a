"""The client has a call's whole answer before the proxy's bookkeeping, and nothing that needs the count misses it.

The proxy answers first and counts after (usage, cost, notes, the fixture), so
bookkeeping adds nothing to a call's latency. These tests hold the bookkeeping
(the price lookup of the call's cost blocks until released) and show, by the
order of events and not by a stopwatch, that the client already has the whole
answer, stream end included; that the eval's report waits for the count; and
that a call made after an answer arrived waits for its tokens under a budget.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.manifest import Budget, Price
from evalrun.models.replay.proxy import ReplayProxy, answer_ended

from harness.fakes_upstream import FakeUpstream

CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}  # the fake reports 18 tokens
WAIT_S = 30.0  # only ever reached when the behaviour is broken
# How long a caller held back must stay held to count as waiting: a broken proxy lets it through at once.
HELD_S = 0.3


class _HeldPrices(Mapping[str, Price]):
    """``[models.prices]`` whose lookups, made while a call is counted, wait for ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self._prices = {"gpt-4o-mini": Price(input=1.0, output=2.0)}

    def _hold(self) -> None:
        self.entered.set()
        assert self.release.wait(WAIT_S)

    def __getitem__(self, name: str) -> Price:
        self._hold()
        return self._prices[name]

    def __contains__(self, name: object) -> bool:
        self._hold()
        return name in self._prices

    def __iter__(self) -> Iterator[str]:
        self._hold()
        return iter(self._prices)

    def __len__(self) -> int:
        return len(self._prices)


def _call(base: str, stream: bool) -> tuple[int, str]:
    """One call, read to its end (for a stream: its terminating chunk)."""
    with httpx.Client(timeout=WAIT_S * 2, trust_env=False) as client:
        body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}} if stream else CHAT
        with client.stream("POST", f"{base}/v1/chat/completions", json=body) as response:
            return response.status_code, response.read().decode()


class _Caller(threading.Thread):
    def __init__(self, base: str, stream: bool) -> None:
        super().__init__(daemon=True)
        self.base, self.stream = base, stream
        self.answer: tuple[int, str] | None = None

    def run(self) -> None:
        self.answer = _call(self.base, self.stream)


class _Reporter(threading.Thread):
    def __init__(self, proxy: ReplayProxy, name: str) -> None:
        super().__init__(daemon=True)
        self.proxy, self.name_ = proxy, name
        self.report: Any = None

    def run(self) -> None:
        self.report = self.proxy.eval_report(self.name_)


def _recorded(upstream: FakeUpstream, folder: Path, stream: bool) -> None:
    with ReplayProxy("record", upstream=upstream.url) as proxy:
        assert _call(proxy.register_eval("held", folder), stream)[0] == 200


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("mode", ["live", "record", "replay"])
def test_the_client_has_the_whole_answer_while_the_call_is_still_being_counted(tmp_path, mode, stream):
    prices = _HeldPrices()
    with FakeUpstream() as upstream:
        if mode == "replay":
            _recorded(upstream, tmp_path, stream)
        with ReplayProxy(mode, upstream=upstream.url, prices=prices) as proxy:  # type: ignore[arg-type]
            base = proxy.register_eval("held", tmp_path)
            caller = _Caller(base, stream)
            caller.start()
            assert prices.entered.wait(WAIT_S), "the call was never counted"
            # Counting is held: the client must have its whole answer already.
            caller.join(WAIT_S)
            assert not caller.is_alive(), "the client got the end of its answer only after the bookkeeping"
            status, text = caller.answer
            assert status == 200
            if stream:
                assert "data: [DONE]" in text and '"total_tokens": 18' in text
            # A report asked for now waits for the count (the eval's process may have ended already).
            reporter = _Reporter(proxy, "held")
            reporter.start()
            reporter.join(HELD_S)
            assert reporter.is_alive(), "the report did not wait for the call still being counted"
            prices.release.set()
            reporter.join(WAIT_S)
            report = reporter.report
            assert report.calls == 1 and report.total_tokens == 18
            assert report.cost["usd"] > 0 and report.cost["unpriced_calls"] == 0
            if mode == "record":  # and it was written before the report was given
                assert (tmp_path / "held" / "0001.json").is_file()


@contextmanager
def _first_call_answered_not_counted(
    budget: Budget, name: str, stream: bool
) -> Iterator[tuple[FakeUpstream, ReplayProxy, str, _HeldPrices]]:
    """A live proxy under ``budget`` whose first call of eval ``name`` is answered, its tokens held from counting."""
    prices = _HeldPrices()
    with FakeUpstream() as upstream, ReplayProxy(
        "live", upstream=upstream.url, budget=budget, prices=prices  # type: ignore[arg-type]
    ) as proxy:
        base = proxy.register_eval(name, None)
        first = _Caller(base, stream)
        first.start()
        assert prices.entered.wait(WAIT_S)
        first.join(WAIT_S)
        assert first.answer is not None and first.answer[0] == 200
        yield upstream, proxy, base, prices


def _held_until_counted_then_refused(base: str, stream: bool, count: threading.Event, reason: str) -> None:
    """A call made now waits while the answered call is not counted; once ``count`` lets it be, it is refused."""
    second = _Caller(base, stream)
    second.start()
    second.join(HELD_S)
    assert second.is_alive(), "a call went ahead before the answered call's tokens were counted"
    count.set()
    second.join(WAIT_S)
    assert second.answer is not None and second.answer[0] == 402, second.answer
    assert "evalrun_budget_exhausted" in second.answer[1] and reason in second.answer[1]


@pytest.mark.parametrize(
    ("budget", "reason"),
    [(Budget(tokens=18), "18 of 18 tokens used"), (Budget(usd=0.0000001), "used")],
    ids=["tokens", "usd"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_call_made_after_an_answer_arrived_is_refused_by_that_answers_tokens(tmp_path, budget, reason, stream):
    with _first_call_answered_not_counted(budget, "spend", stream) as (upstream, proxy, base, prices):
        # The first call's tokens are not added yet; the next call must not slip under the cap.
        _held_until_counted_then_refused(base, stream, prices.release, reason)
        assert len(upstream.requests) == 1
        assert proxy.budget_exhausted()
        assert proxy.eval_report("spend").calls == 1


def test_a_calls_cap_alone_does_not_wait_for_counting(tmp_path):
    """Calls are counted when they start: a calls cap has nothing to wait for."""
    with _first_call_answered_not_counted(Budget(calls=5), "calls", False) as (upstream, proxy, base, prices):
        # The second call goes ahead and reaches the upstream while the first is still being counted.
        second = _Caller(base, False)
        second.start()
        for _ in range(int(WAIT_S / 0.02)):
            if len(upstream.requests) == 2:
                break
            second.join(0.02)
        assert len(upstream.requests) == 2
        prices.release.set()
        second.join(WAIT_S)
        assert second.answer is not None and second.answer[0] == 200
        assert proxy.eval_report("calls").calls == 2


ANSWER_ENDS = {
    "openai": ("/v1/chat/completions", {**CHAT, "stream": True, "stream_options": {"include_usage": True}}, "data: [DONE]"),
    "anthropic": ("/v1/messages", {"model": "claude-3-5-haiku", "max_tokens": 16, "stream": True,
                                   "messages": [{"role": "user", "content": "hi"}]}, "event: message_stop"),
}


@pytest.mark.parametrize("api", sorted(ANSWER_ENDS))
def test_a_call_made_after_a_streams_end_event_waits_for_its_tokens_though_the_upstream_has_not_closed_it(api):
    """An SDK stops reading at the answer's end event ([DONE], message_stop) and may call again at once,
    while the upstream has not yet ended the stream: that next call is measured against the answer's tokens."""
    route, body, end = ANSWER_ENDS[api]
    with FakeUpstream(hold_end=True) as upstream, ReplayProxy("live", upstream=upstream.url,
                                                              budget=Budget(tokens=1)) as proxy:
        base = proxy.register_eval("spend", None)
        with httpx.Client(timeout=WAIT_S, trust_env=False) as client:
            with client.stream("POST", f"{base}{route}", json=body) as response:
                assert response.status_code == 200
                for line in response.iter_lines():
                    if line == end:
                        break  # the whole answer is in; the client goes on, as the SDKs do
        # The upstream still holds the stream open: its tokens are not counted yet.
        _held_until_counted_then_refused(base, False, upstream.release, "tokens used")
        assert len(upstream.requests) == 1


_STREAM_TEXTS = [
    'data: {"choices": [{"delta": {"content": "data: [DONE] is not an end here"}}]}\n\ndata: [DONE]\n\n',
    'event: message_delta\ndata: {"type": "message_delta"}\n\nevent: message_stop\ndata: {"type": "message_stop"}\n\n',
    'event: response.output_text.delta\ndata: {}\n\nevent: response.completed\r\ndata: {}\r\n\r\n',
]


@given(st.sampled_from(_STREAM_TEXTS), st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=40))
def test_the_end_event_is_found_in_the_piece_that_completes_it_however_the_stream_is_cut(text, sizes):
    data = text.encode()
    marker_end = max(data.rfind(m) + len(m) for m in (b"data: [DONE]", b"event: message_stop", b"event: response.completed"))
    raw, first = bytearray(), None
    pieces, at = [], 0
    for size in sizes * (len(data) // sum(sizes) + 1):
        if at >= len(data):
            break
        pieces.append(data[at : at + size])
        at += size
    for index, piece in enumerate(pieces):
        raw += piece
        if first is None and answer_ended(raw, len(piece)):
            first = index
    completing = next(i for i in range(len(pieces)) if sum(map(len, pieces[: i + 1])) >= marker_end)
    assert first == completing


def test_a_stream_without_an_end_event_is_not_taken_as_ended():
    text = b'data: {"choices": []}\n\nevent: message_start\ndata: {}\n\nxdata: [DONE]\n\n'
    assert not answer_ended(text, len(text))


def test_the_openai_sdk_calling_again_after_its_stream_ends_is_refused_by_that_streams_tokens():
    """The real openai SDK stops reading at ``[DONE]`` and returns; its next call must not slip under the cap
    while the upstream still holds that stream open. (The anthropic SDK reads a stream to its very end: it
    cannot call again before the proxy has counted the tokens.)"""
    import openai

    with FakeUpstream(hold_end=True) as upstream, ReplayProxy("live", upstream=upstream.url,
                                                              budget=Budget(tokens=1)) as proxy:
        client = openai.OpenAI(base_url=proxy.register_eval("spend", None) + "/v1", api_key="sk-made-up",
                               max_retries=0, timeout=WAIT_S)
        streamed = client.chat.completions.create(model="gpt-4o-mini", messages=CHAT["messages"], stream=True)
        assert [c.choices[0].delta.content for c in streamed if c.choices] != []
        assert len(upstream.requests) == 1 and not upstream.release.is_set()  # the stream is still open upstream
        releaser = threading.Timer(HELD_S, upstream.release.set)
        releaser.start()
        try:
            with pytest.raises(openai.APIStatusError) as refused:
                client.chat.completions.create(model="gpt-4o-mini", messages=CHAT["messages"])
        finally:
            releaser.join()
        assert refused.value.status_code == 402 and "tokens used" in str(refused.value)
        assert len(upstream.requests) == 1
