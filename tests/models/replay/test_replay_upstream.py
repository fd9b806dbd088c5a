"""Where a relayed call goes and how it is authenticated; request bodies and disconnects on the wire."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from evalrun.secrets import PLACEHOLDER
from evalrun.models.replay.proxy import ReplayProxy
from evalrun.models.replay.upstream import api_style, choose_target, upstream_headers

from harness.fakes_upstream import FakeUpstream

KEYS = {"OPENAI_API_KEY": "sk-openai-REAL-123456", "ANTHROPIC_API_KEY": "sk-ant-REAL-654321"}


@pytest.mark.parametrize(
    ("upstream", "path", "style", "url", "provider"),
    [
        (None, "/v1/chat/completions", "openai", "https://api.openai.com/v1/chat/completions", "openai"),
        (None, "/v1/messages", "anthropic", "https://api.anthropic.com/v1/messages", "anthropic"),
        ("https://openrouter.ai/api", "/v1/chat/completions", "openai",
         "https://openrouter.ai/api/v1/chat/completions", "openrouter"),
        ("http://127.0.0.1:8080", "/v1/embeddings?x=1", "openai", "http://127.0.0.1:8080/v1/embeddings?x=1", "openai"),
        # The SDKs' base URL form: its /v1 is the path's /v1, not a second one.
        ("http://127.0.0.1:8080/v1", "/v1/chat/completions", "openai", "http://127.0.0.1:8080/v1/chat/completions", "openai"),
        ("http://127.0.0.1:8080/v1/", "/v1/messages", "anthropic", "http://127.0.0.1:8080/v1/messages", "anthropic"),
        ("https://openrouter.ai/api/v1", "/v1/chat/completions", "openai",
         "https://openrouter.ai/api/v1/chat/completions", "openrouter"),
        ("http://127.0.0.1:8080/v1", "/v2/x", "openai", "http://127.0.0.1:8080/v1/v2/x", "openai"),
    ],
    ids=["openai-default", "anthropic-default", "prefix", "local", "sdk-form", "sdk-form-slash", "prefix-v1", "not-v1"],
)
def test_the_upstream_is_chosen_by_flag_or_by_api_style(upstream, path, style, url, provider):
    target = choose_target(upstream, path, style)
    assert target.base_url + target.path == url and target.provider == provider


@pytest.mark.parametrize(
    ("path", "headers", "style"),
    [
        ("/v1/messages", {}, "anthropic"),
        ("/v1/complete", {"anthropic-version": "2023-06-01"}, "anthropic"),
        ("/v1/chat/completions", {"Authorization": "Bearer x"}, "openai"),
        ("/v1/responses", {}, "openai"),
    ],
)
def test_api_style_is_read_from_the_path_and_headers(path, headers, style):
    assert api_style(path, headers) == style


def test_the_placeholder_is_replaced_by_the_real_key_upstream():
    sent = upstream_headers({"authorization": f"Bearer {PLACEHOLDER}", "X-Evalrun-Session": "s"}, "openai", KEYS)
    assert sent == {"Authorization": f"Bearer {KEYS['OPENAI_API_KEY']}", "Accept-Encoding": "identity"}


def test_an_anthropic_call_without_a_key_gets_x_api_key():
    sent = upstream_headers({"anthropic-version": "2023-06-01"}, "anthropic", KEYS)
    assert sent["x-api-key"] == KEYS["ANTHROPIC_API_KEY"] and "Authorization" not in sent


def test_a_key_the_client_sent_itself_passes_through():
    sent = upstream_headers({"Authorization": "Bearer sk-own-key"}, "openai", KEYS)
    assert sent["Authorization"] == "Bearer sk-own-key"


def test_without_a_key_in_the_environment_nothing_is_injected():
    assert "Authorization" not in upstream_headers({}, "openai", {})


def test_a_chunked_request_body_is_relayed_whole(tmp_path):
    def pieces():
        yield b'{"model": "m", "messages": [{"role": "user", '
        yield b'"content": "in two pieces"}]}'

    with FakeUpstream() as upstream, ReplayProxy("live", upstream=upstream.url) as proxy:
        base = proxy.register_eval("c", None)
        answer = httpx.post(f"{base}/v1/chat/completions", content=pieces(), trust_env=False,
                            headers={"Content-Type": "application/json"})
    assert answer.status_code == 200
    assert upstream.requests[0].body["messages"][0]["content"] == "in two pieces"


def test_a_client_that_leaves_mid_stream_still_has_its_call_counted_but_not_recorded(tmp_path):
    with FakeUpstream(hold_stream=True) as upstream, ReplayProxy("record", upstream=upstream.url) as proxy:
        base = proxy.register_eval("gone", tmp_path)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx.Client(timeout=10, trust_env=False) as client:
            with client.stream("POST", f"{base}/v1/chat/completions", json=body) as response:
                next(response.iter_raw())
        upstream.release.set()
        deadline = time.monotonic() + 10
        while proxy.eval_report("gone").calls == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        report = proxy.eval_report("gone")
        assert report.calls == 1 and report.total_tokens == 18  # the upstream was paid: its usage counts
        # An abandoned attempt is no answer: its retry, not it, takes index 1 (even though the attempt's
        # end event came from the upstream after the client had left).
        assert not (tmp_path / "gone" / "0001.json").exists()
        retried = httpx.post(f"{base}/v1/chat/completions", json={**body, "stream": False}, trust_env=False, timeout=10)
        assert retried.status_code == 200
        proxy.eval_report("gone")
    assert json.loads((tmp_path / "gone" / "0001.json").read_text())["response"]["body"]["choices"]
    assert sorted(p.name for p in (tmp_path / "gone").iterdir()) == ["0001.json"]


def test_a_client_that_closes_after_the_last_event_had_the_whole_answer_and_it_is_recorded(tmp_path):
    with FakeUpstream(hold_end=True) as upstream, ReplayProxy("record", upstream=upstream.url) as proxy:
        base = proxy.register_eval("done", tmp_path)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
        with httpx.Client(timeout=10, trust_env=False) as client:
            with client.stream("POST", f"{base}/v1/chat/completions", json=body) as response:
                for line in response.iter_lines():
                    if line == "data: [DONE]":
                        break  # the whole answer is in; the stream's end has not come yet
        upstream.release.set()  # closed before the terminating chunk
        deadline = time.monotonic() + 10
        while proxy.eval_report("done").calls == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        report = proxy.eval_report("done")
    assert report.calls == 1
    assert (tmp_path / "done" / "0001.json").is_file()


def test_an_upstream_that_breaks_off_a_plain_answer_gets_an_error_the_sdk_does_not_retry(tmp_path):
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def half_answer() -> None:
        conn, _ = listener.accept()
        request = b""  # the whole request first: answering early could reset the proxy's send instead
        while b"\r\n\r\n" not in request:
            request += conn.recv(65536)
        head, _, body = request.partition(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
        while len(body) < length:
            body += conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":")
        conn.close()

    threading.Thread(target=half_answer, daemon=True).start()
    port = listener.getsockname()[1]
    with ReplayProxy("record", upstream=f"http://127.0.0.1:{port}") as proxy:
        base = proxy.register_eval("cut", tmp_path)
        answer = httpx.post(f"{base}/v1/chat/completions", json={"model": "m", "messages": []}, trust_env=False, timeout=10)
        report = proxy.eval_report("cut")
    listener.close()
    assert answer.status_code == 424 and answer.headers["x-should-retry"] == "false"
    assert "broke off the response (IncompleteRead)" in report.missing[0]
    assert not list(tmp_path.rglob("*.json"))


def _sdk_calls(base: str) -> tuple[str, str]:
    """One chat call through the real openai SDK and one message through the real anthropic SDK, at ``base``."""
    import anthropic
    import openai

    gpt = openai.OpenAI(base_url=f"{base}/v1", api_key=PLACEHOLDER, max_retries=0, http_client=httpx.Client(trust_env=False))
    claude = anthropic.Anthropic(base_url=base, api_key=PLACEHOLDER, max_retries=0,
                                 http_client=anthropic.DefaultHttpxClient(trust_env=False))
    chat = gpt.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi gpt"}])
    message = claude.messages.create(model="claude-3-5-haiku-latest", max_tokens=20,
                                     messages=[{"role": "user", "content": "hi claude"}])
    return chat.choices[0].message.content or "", message.content[0].text


def test_each_provider_is_relayed_to_its_own_upstream_and_an_eval_may_have_its_own(tmp_path):
    with FakeUpstream(provider="openai") as gpt_up, FakeUpstream(provider="anthropic") as claude_up, \
            FakeUpstream(provider="openai") as gateway, \
            ReplayProxy("record", upstream={"openai": gpt_up.url, "anthropic": f"{claude_up.url}/v1"},
                        key_env=KEYS) as proxy:
        base = proxy.register_eval("both", tmp_path / "both")
        own = proxy.register_eval("gw", tmp_path / "gw", upstreams={"openai": f"{gateway.url}/v1"})
        answers = _sdk_calls(base)
        own_answers = _sdk_calls(own)
        reports = proxy.eval_report("both"), proxy.eval_report("gw")
    assert all(a.startswith("echo: hi ") for a in answers + own_answers), (answers, own_answers)
    assert [r.path for r in gpt_up.requests] == ["/v1/chat/completions"]
    assert [r.path for r in claude_up.requests] == ["/v1/messages", "/v1/messages"]  # "gw" changed only openai's
    assert [r.path for r in gateway.requests] == ["/v1/chat/completions"]
    assert gpt_up.requests[0].headers["Authorization"] == f"Bearer {KEYS['OPENAI_API_KEY']}"
    assert claude_up.requests[0].headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    assert all(r.failures() == [] for r in reports), [r.missing for r in reports]
    assert sorted(p.name for p in (tmp_path / "both" / "both").iterdir()) == ["0001.json", "0002.json"]


def test_an_answer_from_the_wrong_upstream_is_never_recorded_and_fails_the_eval_naming_the_url(tmp_path):
    import anthropic

    # One upstream for both providers, as before: the Anthropic call reaches an OpenAI-only server and gets a 404.
    with FakeUpstream(provider="openai") as gpt_up, \
            ReplayProxy("record", upstream=f"{gpt_up.url}/v1", key_env=KEYS) as proxy:
        base = proxy.register_eval("one", tmp_path)
        claude = anthropic.Anthropic(base_url=base, api_key=PLACEHOLDER, max_retries=0,
                                     http_client=anthropic.DefaultHttpxClient(trust_env=False))
        with pytest.raises(anthropic.NotFoundError):
            claude.messages.create(model="claude-3-5-haiku-latest", max_tokens=20,
                                   messages=[{"role": "user", "content": "hi"}])
        answer = httpx.post(f"{base}/v1/chat/completions", trust_env=False,
                            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "next"}]})
        report = proxy.eval_report("one")
    assert answer.status_code == 200
    # The 404 took no index and left no fixture: t2 cannot replay it as the answer; the next call is 0001.
    files = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert files == ["0001.json"]
    assert "chat/completions" in (tmp_path / "one" / "0001.json").read_text()
    assert report.failures() == [
        f"evalrun record: one/one: POST {gpt_up.url}/v1/messages answered 404 (no such endpoint there: is it this "
        "provider's base URL?); not recorded: check the anthropic upstream ([models] upstream.anthropic, "
        "EVALRUN_UPSTREAM_ANTHROPIC; the run's first lines say where it was set)"
    ]


def test_a_stream_whose_end_event_comes_after_its_client_left_gives_its_place_to_the_retry(tmp_path):
    """The stream's end event, arriving in one piece after the client left, would take the call's index
    (an SDK may call again as soon as it has that event); the client never had it, so the index goes back
    and the retry takes it: no hole in the session, which a suite replayed by index would trip on."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    left = threading.Event()
    first = b'data: {"choices": [{"index": 0, "delta": {"content": "he"}}]}\n\n'
    rest = b'data: {"choices": [{"index": 0, "delta": {"content": "llo"}}]}\n\ndata: [DONE]\n\n'

    class Upstream(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if not body.get("stream"):
                answer = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "again"}}],
                                     "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(first), first))
            self.wfile.flush()
            left.wait(10)
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))  # the end event, in one piece

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        with ReplayProxy("record", upstream=f"http://127.0.0.1:{server.server_address[1]}") as proxy:
            base = proxy.register_eval("gone", tmp_path)
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
            with httpx.Client(timeout=10, trust_env=False) as client:
                with client.stream("POST", f"{base}/v1/chat/completions", json=body) as response:
                    next(response.iter_raw())
            left.set()
            deadline = time.monotonic() + 10
            while proxy.eval_report("gone").calls == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
            retried = httpx.post(f"{base}/v1/chat/completions", json={**body, "stream": False}, trust_env=False, timeout=10)
            assert retried.status_code == 200
            report = proxy.eval_report("gone")
    finally:
        server.shutdown()
        server.server_close()
        serving.join()
    assert report.calls == 2
    assert sorted(p.name for p in (tmp_path / "gone").iterdir()) == ["0001.json"]
    assert json.loads((tmp_path / "gone" / "0001.json").read_text())["response"]["body"]["choices"][0]["message"]["content"] == "again"
