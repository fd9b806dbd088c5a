"""A real fake model upstream on 127.0.0.1 for the replay tests (no tests of its own).

It answers like the real APIs: OpenAI chat completions (plain and streamed,
with a final usage chunk), ``/v1/embeddings``, ``/v1/responses``, and
Anthropic ``/v1/messages`` (plain and streamed). Every request it receives is
kept in ``requests``, so a test can prove what did, or did not, reach it.
It echoes the credential it received inside the response text, so a test can
prove that a fixture redacts a key even where the upstream repeats it.

``hold_stream``: when set, a stream sends its first event, then waits for
``release`` before the rest, so a test can see that the proxy relays chunk by chunk.

``scripted``: the flaky, slow, compressing upstream of the real-SDK tests. It
does not echo the credential; every answer is ``answer <n>: <prompt>`` with n
the request's number, so a call given another call's answer shows; every
answer carries ``x-request-id``/``request-id`` ``req_<n>``; a chat request
with tools and no tool result gets a ``get_weather`` tool call; and markers in
the prompt script the situations real clients meet:

- ``[500-no-retry]``: the first such request is a 500 with ``x-should-retry: false``;
- ``[429]``: the first such request is a 429 with ``retry-after-ms: 20``;
- ``[slow-first]``: the first such request is answered only once a second one
  (the client's retry after its timeout) has arrived;
- ``[gzip]``: the answer is gzip-compressed although identity was asked for;
- ``[slow-tail]``: a stream sends all its events, ``[DONE]`` included, then waits
  ``tail_delay`` seconds before its terminating chunk (an SDK that closes after
  ``[DONE]`` has its whole answer long before the proxy sees the stream end).

``judge``: when set, a judge call (a chat request with a ``response_format``)
is answered with the verdict ``judge(subject)`` gives for its SUBJECT text.

``verdict``: when set, a chat request with a ``response_format`` (a judge
call, as evalrun's scorer SDK makes) is answered with that text as content;
``{auth}`` in it becomes the credential received, so a test can prove that a
raw reply shown as evidence is redacted.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OPENAI_MODEL = "gpt-4o-mini-2024-07-18"
ANTHROPIC_MODEL = "claude-3-5-haiku-20241022"


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeUpstream:
    requests: list[Received] = field(default_factory=list)
    hold_stream: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    scripted: bool = False
    hold_end: bool = False  # a stream waits for ``release`` after its last event, before it ends
    seen_markers: dict[str, int] = field(default_factory=dict)
    second_attempt: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    verdict: str | None = None
    # judge(subject text) -> passes: a judge call is answered with that verdict (a judge that reads what it grades)
    judge: Callable[[str], bool] | None = None
    tail_delay: float = 1.5  # how long a ``[slow-tail]`` stream waits before its end
    # "openai" or "anthropic": serve that provider's API alone, and 404 the other's paths (as a real provider does)
    provider: str | None = None
    # When a streamed OpenAI chat answer ends with a usage chunk: "always" (the fake's old way), "asked" (only
    # when the request sets stream_options.include_usage, as the API does), "never" (a server that ignores it)
    # or "refused" (an older server that answers a request with stream_options 400, and streams without usage)
    stream_usage: str = "always"
    stream_tokens: tuple[int, int] = (13, 5)  # (prompt, completion) tokens a streamed chat answer reports

    def __enter__(self) -> FakeUpstream:
        owner = self

        class Handler(_Handler):
            fake = owner

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.second_attempt.set()
        self._server.shutdown()
        self._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else delayed ACK adds ~40 ms per answer
    fake: FakeUpstream

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        with self.fake.lock:
            self.fake.requests.append(Received(self.command, self.path, dict(self.headers.items()), body))
            self.number = len(self.fake.requests)
        self.gzip = self.slow_tail = False
        credential = self.headers.get("Authorization") or self.headers.get("x-api-key") or "none"
        text = f"echo: {_last_user_text(body)} (auth seen: {credential})"
        route = self.path.split("?")[0]
        if self.fake.provider is not None and (route == "/v1/messages") != (self.fake.provider == "anthropic"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
            return
        if self.fake.scripted:
            text = f"answer {self.number}: {_last_user_text(body)}"
            if self._scripted_failure(_last_user_text(body)):
                return
            if route == "/v1/chat/completions" and body.get("tools") and not any(
                m.get("role") == "tool" for m in body.get("messages", [])
            ):
                self._json(200, _tool_call_completion())
                return
        if self.fake.judge is not None and route == "/v1/chat/completions" and body.get("response_format"):
            subject = _last_user_text(body).rsplit("SUBJECT:\n", 1)[-1]
            passed = self.fake.judge(subject)
            reason = f"the subject {'meets' if passed else 'misses'} the rubric"
            self._json(200, _openai_completion(json.dumps({"pass": passed, "reason": reason})))
        elif self.fake.verdict is not None and route == "/v1/chat/completions" and body.get("response_format"):
            self._json(200, _openai_completion(self.fake.verdict.replace("{auth}", credential)))
        elif route == "/v1/chat/completions":
            if body.get("stream"):
                asked = bool((body.get("stream_options") or {}).get("include_usage"))
                if self.fake.stream_usage == "refused" and "stream_options" in body:
                    self._json(400, {"error": {"message": "Unrecognized request argument supplied: stream_options",
                                               "type": "invalid_request_error"}})
                    return
                usage = {"always": True, "asked": asked, "never": False, "refused": False}[self.fake.stream_usage]
                self._stream(_openai_events(text, usage=usage, tokens=self.fake.stream_tokens))
            else:
                self._json(200, _openai_completion(text))
        elif route == "/v1/messages":
            if body.get("stream"):
                self._stream(_anthropic_events(text))
            else:
                self._json(200, _anthropic_message(text))
        elif route == "/v1/embeddings":
            self._json(200, {"object": "list", "model": "text-embedding-3-small",
                             "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
                             "usage": {"prompt_tokens": 4, "total_tokens": 4}})
        elif route == "/v1/responses":
            self._json(200, {"id": "resp_1", "object": "response", "model": "gpt-4.1-2025-04-14",
                             "output": [{"type": "message", "content": [{"type": "output_text", "text": text}]}],
                             "usage": {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}})
        elif route == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": OPENAI_MODEL}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

    def _scripted_failure(self, prompt: str) -> bool:
        """Play the marker's situation; True when this request is answered already."""
        with self.fake.lock:  # counted per prompt: "the first such request" of each
            seen = {m: self.fake.seen_markers.get(prompt, 0) for m in ("[500-no-retry]", "[429]", "[slow-first]") if m in prompt}
            self.fake.seen_markers[prompt] = self.fake.seen_markers.get(prompt, 0) + 1
        self.gzip = "[gzip]" in prompt
        self.slow_tail = "[slow-tail]" in prompt
        if seen.get("[500-no-retry]") == 0:
            self._json(500, {"error": {"message": "the server had an error", "type": "server_error"}},
                       {"x-should-retry": "false"})
            return True
        if seen.get("[429]") == 0:
            self._json(429, {"error": {"message": "rate limited", "type": "rate_limit_error"}}, {"retry-after-ms": "20"})
            return True
        if seen.get("[slow-first]") == 0:
            self.fake.second_attempt.wait(60)  # the client gave up on this attempt and retried
        elif "[slow-first]" in seen:
            self.fake.second_attempt.set()
        return False

    def _json(self, status: int, payload: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        if getattr(self, "gzip", False):
            data = gzip.compress(data)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if getattr(self, "gzip", False):
            self.send_header("Content-Encoding", "gzip")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("x-request-id", f"req_{getattr(self, 'number', 0)}")
        self.send_header("request-id", f"req_{getattr(self, 'number', 0)}")
        self.send_header("Set-Cookie", "session=upstream-cookie")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", f"req_{getattr(self, 'number', 0)}")
        self.send_header("request-id", f"req_{getattr(self, 'number', 0)}")
        packer = zlib.compressobj(wbits=16 + zlib.MAX_WBITS) if getattr(self, "gzip", False) else None
        if packer is not None:
            self.send_header("Content-Encoding", "gzip")
        self.end_headers()
        for number, event in enumerate(events):
            data = event.encode()
            if packer is not None:
                data = packer.compress(data) + packer.flush(zlib.Z_SYNC_FLUSH)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if number == 0 and self.fake.hold_stream:
                self.fake.release.wait(10)
        if packer is not None:
            data = packer.flush()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        if self.fake.hold_end:
            self.wfile.flush()
            self.fake.release.wait(10)
        if getattr(self, "slow_tail", False):
            self.wfile.flush()
            time.sleep(self.fake.tail_delay)
        self.wfile.write(b"0\r\n\r\n")


def _last_user_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return str(body.get("input", ""))


def _tool_call_completion() -> dict[str, Any]:
    call = {"id": "call_fake1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    return {
        "id": "chatcmpl-tool", "object": "chat.completion", "created": 1718000000, "model": OPENAI_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39},
    }


def _openai_completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake1", "object": "chat.completion", "created": 1718000000, "model": OPENAI_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _openai_events(text: str, usage: bool = True, tokens: tuple[int, int] = (13, 5)) -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> str:
        payload = {"id": "chatcmpl-fake2", "object": "chat.completion.chunk", "created": 1718000000,
                   "model": OPENAI_MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
                   if usage is None else [], "usage": usage}
        return f"data: {json.dumps(payload)}\n\n"

    half = len(text) // 2
    return [
        chunk({"role": "assistant", "content": text[:half]}),
        chunk({"content": text[half:]}),
        chunk({}, "stop"),
        *([chunk({}, usage={"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)})]
          if usage else []),
        "data: [DONE]\n\n",
    ]


def _anthropic_message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_fake1", "type": "message", "role": "assistant", "model": ANTHROPIC_MODEL,
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 6},
    }


def _anthropic_events(text: str) -> list[str]:
    def event(name: str, payload: dict[str, Any]) -> str:
        return f"event: {name}\ndata: {json.dumps({'type': name, **payload})}\n\n"

    return [
        event("message_start", {"message": {"id": "msg_fake2", "type": "message", "role": "assistant",
                                            "model": ANTHROPIC_MODEL, "content": [],
                                            "usage": {"input_tokens": 25, "output_tokens": 1}}}),
        event("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        event("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
        event("content_block_stop", {"index": 0}),
        event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        event("message_stop", {}),
    ]
