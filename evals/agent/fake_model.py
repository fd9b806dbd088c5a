"""A scripted model on 127.0.0.1 that answers like OpenAI chat completions, tool calls included.

It exists to record ``fixtures/`` without a paid key (``record_fixtures.py``):
given the agent's conversation it calls ``get_weather`` for "weather in
<City>" and ``convert_currency`` for "<amount> <CUR> in <CUR>" (both in one
turn when asked both), then, once the tool results are in, answers in prose
built from them. Asked for a verdict (a ``json_schema`` response format, as
evalrun's ``judge()`` asks), it passes the SUBJECT when every number in the
GROUND TRUTH appears in it, and says which one is missing otherwise. Its responses have the real shape: ids, ``created``,
``model`` (the dated snapshot of the model asked for), ``system_fingerprint``, ``finish_reason`` and ``usage`` with the
token details. Everything is derived from the request, so recording twice
gives identical files.

    python fake_model.py            # prints its URL, serves until Ctrl-C
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-4o-mini-2024-07-18"
# The dated snapshot that answers for each model name, as the real API answers; others answer as asked.
SNAPSHOTS = {"gpt-4o-mini": MODEL, "gpt-4.1-nano": "gpt-4.1-nano-2025-04-14"}
FINGERPRINT = "fp_0ba0d124f1"
CREATED = 1733140000


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """The chat completion for ``request``: tool calls first, then the answer from their results."""
    messages = request["messages"]
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
    last = messages[-1]
    if (request.get("response_format") or {}).get("type") == "json_schema":
        message = {"role": "assistant", "content": _verdict(last["content"]), "refusal": None}
        finish = "stop"
    elif last["role"] == "user":
        calls = _tool_calls(last["content"], digest)
        if calls:
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": calls, "refusal": None}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": "I can help with weather and currency.", "refusal": None}
            finish = "stop"
    else:
        message = {"role": "assistant", "content": _prose(messages), "refusal": None}
        finish = "stop"
    completion = len(json.dumps(message)) // 4
    prompt = len(json.dumps(messages)) // 4 + 85 * bool(request.get("tools"))
    return {
        "id": f"chatcmpl-{_base62(digest)[:29]}",
        "object": "chat.completion",
        "created": CREATED + sum(1 for m in messages if m["role"] == "assistant"),
        "model": SNAPSHOTS.get(request.get("model") or "", request.get("model") or MODEL),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        },
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def _tool_calls(text: str, digest: str) -> list[dict[str, Any]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for city in re.findall(r"weather in ([A-Z][a-z]+)", text):
        calls.append(("get_weather", {"city": city}))
    for amount, source, target in re.findall(r"(\d+(?:\.\d+)?) ([A-Z]{3}) (?:in|to) ([A-Z]{3})", text):
        number = float(amount)
        calls.append(("convert_currency", {"amount": int(number) if number.is_integer() else number,
                                           "from_currency": source, "to_currency": target}))
    return [
        {"id": f"call_{_base62(digest + str(n))[:24]}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args, separators=(",", ":"))}}
        for n, (name, args) in enumerate(calls)
    ]


def _prose(messages: list[dict[str, Any]]) -> str:
    sentences = []
    for message in messages:
        if message["role"] != "tool":
            continue
        result = json.loads(message["content"])
        if "temp_c" in result:
            sentences.append(f"It is {result['temp_c']}°C in {result['city']} right now, {result['conditions']}.")
        elif "result" in result:
            sentences.append(f"{result['amount']} {result['from']} is about {result['result']:.2f} {result['to']}.")
        else:
            sentences.append(f"I could not find that: {result.get('error', 'no result')}.")
    return " ".join(sentences)


def _verdict(prompt: str) -> str:
    """A judge's verdict: truthful when every number of the ground truth is in the subject."""
    truth = prompt.split("GROUND TRUTH:", 1)[-1].split("SUBJECT:", 1)[0]
    subject = prompt.split("SUBJECT:", 1)[-1]
    said = {float(n) for n in re.findall(_NUMBER, subject)}
    wanted = list(dict.fromkeys(re.findall(_NUMBER, truth)))  # each figure once, in order
    missing = [n for n in wanted if float(n) not in said]
    if missing:
        verdict = {"pass": False, "reason": f"The answer does not state {missing[0]}, which the tools returned."}
    else:
        verdict = {"pass": True, "reason": f"Every figure the tools returned ({', '.join(wanted)}) is stated in the answer."}
    return json.dumps(verdict)


_NUMBER = r"-?\d+(?:\.\d+)?"


def _base62(hexdigest: str) -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    number, out = int(hashlib.sha256(hexdigest.encode()).hexdigest(), 16), ""
    while number:
        number, digit = divmod(number, 62)
        out += alphabet[digit]
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else delayed ACK adds ~40 ms per answer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.split("?")[0] == "/v1/chat/completions":
            status, payload = 200, answer(body)
        else:
            status, payload = 404, {"error": {"message": f"Unknown request URL: POST {self.path}.",
                                              "type": "invalid_request_error", "code": "unknown_url"}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start() -> ThreadingHTTPServer:
    """Serve on an ephemeral port of 127.0.0.1 in a daemon thread; ``server.server_address[1]`` is the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


if __name__ == "__main__":
    running = start()
    print(f"fake model on http://127.0.0.1:{running.server_address[1]} (Ctrl-C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        running.shutdown()
