"""A real fake model upstream on 127.0.0.1 for the replay tests (no tests of its own).

It answers like the real APIs: OpenAI chat completions (plain and streamed,
with a final usage chunk), ``/v1/embeddings``, ``/v1/responses``, and
Anthropic ``/v1/messages`` (plain and streamed). Every request it receives is
kept in ``requests``, so a test can prove what did, or did not, reach it.
It echoes the credential it received inside the response text, so a test can
prove that a fixture redacts a key even where the upstream repeats it.

``hold_stream``: when set, a stream sends its first event, then waits for
``release`` before the rest, so a test can see that the proxy relays chunk by chunk.
"""

from __future__ import annotations

import json
import threading
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
        self.fake.requests.append(Received(self.command, self.path, dict(self.headers.items()), body))
        credential = self.headers.get("Authorization") or self.headers.get("x-api-key") or "none"
        text = f"echo: {_last_user_text(body)} (auth seen: {credential})"
        route = self.path.split("?")[0]
        if route == "/v1/chat/completions":
            if body.get("stream"):
                self._stream(_openai_events(text))
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

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{len(self.fake.requests)}")
        self.send_header("Set-Cookie", "session=upstream-cookie")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for number, event in enumerate(events):
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            if number == 0 and self.fake.hold_stream:
                self.fake.release.wait(10)
        self.wfile.write(b"0\r\n\r\n")


def _last_user_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return str(body.get("input", ""))


def _openai_completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake1", "object": "chat.completion", "created": 1718000000, "model": OPENAI_MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _openai_events(text: str) -> list[str]:
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
        chunk({}, usage={"prompt_tokens": 13, "completion_tokens": 5, "total_tokens": 18}),
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
