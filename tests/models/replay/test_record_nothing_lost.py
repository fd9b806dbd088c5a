"""Record mode never loses a recording: an eval's verdict waits for every one of its calls' fixtures.

The slow paths are forced, not hoped for under load: an upstream that holds a
stream's end after its ``[DONE]`` (the openai SDK closes the response at
``[DONE]``, so the eval's process can end before the proxy sees the stream
end), a fixture writer held past the report's wait, and a fixture the writer
cannot encode. Each ends either with the fixture on disk before the verdict,
or with the eval failed naming the call.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from evalrun.models.replay import proxy as proxy_module
from evalrun.models.replay import recorder as recorder_module
from evalrun.models.replay.proxy import ReplayProxy

from harness.fakes_upstream import FakeUpstream
from harness.sdk_scenarios import KEYS, SCORER, manifest

WAIT_S = 30.0  # only ever reached when the behaviour is broken
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


class _Reporter(threading.Thread):
    def __init__(self, proxy: ReplayProxy, name: str) -> None:
        super().__init__(daemon=True)
        self.proxy, self.name_ = proxy, name
        self.report: Any = None

    def run(self) -> None:
        self.report = self.proxy.eval_report(self.name_)


def test_a_real_sdk_session_recorded_with_a_slow_stream_end_is_on_disk_before_the_verdict(project):
    """A client-timeout retry, a plain call, then a stream whose end comes 1.5 s after its [DONE]."""
    proj = project({"manifest.toml": manifest("", scenarios=()), "evals/sdk/score.py": SCORER})
    with FakeUpstream(scripted=True) as upstream:
        proj.write({"manifest.toml": manifest(upstream.url, scenarios=("retry-plain-stream",))})
        recorded = proj.run("t3", "--record", "-e", "retry-plain-stream-live", env=KEYS, timeout=120)
        # Looked at as soon as evalrun has exited: nothing may still be on its way to disk.
        files = sorted(p.name for p in (proj.root / "evals/sdk/fixtures/retry-plain-stream").glob("*.json"))
    assert recorded.code == 0, recorded.output
    assert files == ["0001.json", "0002.json", "0003.json"], recorded.output
    stream = json.loads((proj.root / "evals/sdk/fixtures/retry-plain-stream/0003.json").read_text())
    assert stream["response"]["stream"][-1] == "data: [DONE]\n\n"
    replayed = proj.run("t2", "-e", "retry-plain-stream", env={"OPENAI_API_KEY": ""}, timeout=120)
    assert replayed.code == 0, replayed.output


def test_the_report_waits_for_a_stream_whose_client_left_at_done_before_its_end(tmp_path):
    with FakeUpstream(hold_end=True) as upstream, ReplayProxy("record", upstream=upstream.url) as proxy:
        base = proxy.register_eval("done", tmp_path)
        with httpx.Client(timeout=WAIT_S, trust_env=False) as client:
            with client.stream("POST", f"{base}/v1/chat/completions", json={**CHAT, "stream": True}) as response:
                for line in response.iter_lines():
                    if line == "data: [DONE]":
                        break  # the whole answer is in; the client closes, as the openai SDK does
        # The eval's process has ended; the upstream has not ended the stream yet.
        reporter = _Reporter(proxy, "done")
        reporter.start()
        reporter.join(0.5)
        assert reporter.is_alive(), "the report was given before the answered stream was counted and written"
        upstream.release.set()
        reporter.join(WAIT_S)
        assert reporter.report.calls == 1 and reporter.report.missing == ()
        assert (tmp_path / "done" / "0001.json").is_file()


def test_a_fixture_still_unwritten_after_the_wait_fails_the_eval_naming_it(tmp_path, monkeypatch):
    held, release = threading.Event(), threading.Event()
    real_write = recorder_module.write_fixture

    def slow_write(*args: Any, **kwargs: Any) -> None:
        held.set()
        release.wait(WAIT_S)
        real_write(*args, **kwargs)

    monkeypatch.setattr(recorder_module, "write_fixture", slow_write)
    monkeypatch.setattr(proxy_module, "WRITE_WAIT_S", 0.2)
    with FakeUpstream() as upstream, ReplayProxy("record", upstream=upstream.url) as proxy:
        base = proxy.register_eval("slow-disk", tmp_path)
        with httpx.Client(timeout=WAIT_S, trust_env=False) as client:
            assert client.post(f"{base}/v1/chat/completions", json=CHAT).status_code == 200
        assert held.wait(WAIT_S)
        report = proxy.eval_report("slow-disk")
        release.set()
    assert report.missing, "the verdict was given while a fixture was still being written"
    assert "slow-disk/0001.json" in report.missing[0] and "not written" in report.missing[0], report.missing


def test_a_fixture_the_writer_cannot_encode_fails_the_eval_naming_it(tmp_path):
    nested = json.loads('{"a":' * 600 + "1" + "}" * 600)  # deeper than the redaction can walk
    with FakeUpstream() as upstream, ReplayProxy("record", upstream=upstream.url, redact_values={"sk-some-key-1234"}) as proxy:
        base = proxy.register_eval("deep", tmp_path)
        with httpx.Client(timeout=WAIT_S, trust_env=False) as client:
            answer = client.post(f"{base}/v1/chat/completions", json={**CHAT, "metadata": nested})
            assert answer.status_code == 200
        report = proxy.eval_report("deep")
    assert not (tmp_path / "deep" / "0001.json").exists()
    assert report.missing and "deep/0001.json" in report.missing[0], report.missing


def test_a_stream_takes_its_place_in_the_session_when_its_end_event_reaches_the_client(tmp_path):
    """The openai SDK returns at a stream's ``[DONE]`` and calls again while the upstream still holds the
    stream open: the stream is still the session's first call, the next one its second, so a suite replayed
    by index (``replay_match = "index"``) gets each answer in the order the code made the calls."""
    import openai

    with FakeUpstream(hold_end=True) as upstream, ReplayProxy("record", upstream=upstream.url) as proxy:
        client = openai.OpenAI(base_url=proxy.register_eval("order", tmp_path) + "/v1", api_key="sk-made-up",
                               max_retries=0, timeout=WAIT_S)
        streamed = client.chat.completions.create(model="gpt-4o-mini", messages=CHAT["messages"], stream=True)
        assert [c for c in streamed] != []
        assert client.chat.completions.create(model="gpt-4o-mini", messages=CHAT["messages"]).choices
        assert len(upstream.requests) == 2 and not upstream.release.is_set()  # the stream is still open upstream
        upstream.release.set()
        report = proxy.eval_report("order")
    assert report.calls == 2 and report.missing == (), report
    first, second = (json.loads((tmp_path / "order" / f"000{n}.json").read_text()) for n in (1, 2))
    assert first["request"]["body"]["stream"] is True and first["response"]["stream"][-1] == "data: [DONE]\n\n"
    assert "stream" not in second["request"]["body"] and second["response"]["body"]["choices"]
