"""Which model answered and how many tokens it reported, read from a response.

This module owns the reading of ``usage`` and ``model`` fields in the shapes
the common APIs answer with, plain or streamed (server-sent events):

- OpenAI chat completions and embeddings: ``usage.prompt_tokens`` /
  ``completion_tokens`` / ``total_tokens``; streamed, the last chunk carries
  ``usage`` only when the request asks for it with ``stream_options``, so the
  proxy asks for it on every relayed chat stream (``ask_for_usage``) and keeps
  that chunk from a client that did not ask (``is_usage_chunk``, ``UsageChunks``).
- OpenAI responses: ``usage.input_tokens`` / ``output_tokens`` /
  ``total_tokens``; streamed, inside the ``response.completed`` event's
  ``response``.
- Anthropic messages: ``usage.input_tokens`` (plus the cache fields) and
  ``output_tokens``; streamed, ``message_start.message.usage`` then the
  cumulative ``message_delta.usage``.

Within one call each field is the largest value seen, because streamed usage
is cumulative; the total is ``total_tokens`` when reported, else input + output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

_INPUT_FIELDS = ("prompt_tokens", "input_tokens")
_CACHE_INPUT_FIELDS = ("cache_creation_input_tokens", "cache_read_input_tokens")  # Anthropic bills these apart
_OUTPUT_FIELDS = ("completion_tokens", "output_tokens")
_NESTED = ("message", "response")  # Anthropic message_start, OpenAI responses stream events


@dataclass
class CallUsage:
    """The usage of one model call."""

    input_tokens: int = 0
    output_tokens: int = 0
    reported_total: int = 0
    models: set[str] = field(default_factory=set)

    @property
    def total_tokens(self) -> int:
        return max(self.reported_total, self.input_tokens + self.output_tokens)


def read_usage(body: bytes | None = None, stream: Iterable[str] = ()) -> CallUsage:
    """The usage of one call from its JSON ``body`` or its SSE ``stream`` chunks."""
    usage = CallUsage()
    if body:
        try:
            _scan(json.loads(body), usage)
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass  # not JSON (an error page, audio): nothing to count
    for chunk in stream:
        for payload in _sse_data(chunk):
            _scan(payload, usage)
    return usage


def _sse_data(chunk: str) -> Iterable[Any]:
    for line in chunk.splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        try:
            yield json.loads(data)
        except json.JSONDecodeError:
            continue


def _scan(obj: Any, usage: CallUsage) -> None:
    if not isinstance(obj, dict):
        return
    model = obj.get("model")
    if isinstance(model, str) and model:
        usage.models.add(model)
    counts = obj.get("usage")
    if isinstance(counts, dict):
        usage.input_tokens = max(usage.input_tokens, _input_tokens(counts))
        usage.output_tokens = max(usage.output_tokens, _first_int(counts, _OUTPUT_FIELDS))
        usage.reported_total = max(usage.reported_total, _int(counts.get("total_tokens")))
    for key in _NESTED:
        nested = obj.get(key)
        if isinstance(nested, dict):
            _scan(nested, usage)


def _input_tokens(counts: dict[str, Any]) -> int:
    return _first_int(counts, _INPUT_FIELDS) + sum(_int(counts.get(name)) for name in _CACHE_INPUT_FIELDS)


def _first_int(counts: dict[str, Any], names: tuple[str, ...]) -> int:
    for name in names:
        if name in counts:
            return _int(counts[name])
    return 0


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def ask_for_usage(body: bytes) -> bytes | None:
    """An OpenAI chat request body that streams without asking for usage, made to ask
    (``stream_options.include_usage``); None when it already asks, does not stream, or is no JSON object."""
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("stream") is not True:
        return None
    options = value.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return None  # not ours to repair: the upstream says what is wrong with it
    if options and options.get("include_usage") is True:
        return None
    value["stream_options"] = {**(options or {}), "include_usage": True}
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def is_usage_chunk(event: str) -> bool:
    """An OpenAI chat stream's usage chunk (no choices, a usage object): sent only to clients that ask for it."""
    for payload in _sse_data(event):
        if isinstance(payload, dict) and payload.get("choices") == [] and isinstance(payload.get("usage"), dict):
            return True
    return False


class UsageChunks:
    """A stream's bytes on their way to a client that did not ask for usage: whole events passed on, the
    usage chunk kept back, a partial event held until its end arrives."""

    _END = (b"\r\n\r\n", b"\n\n")

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> bytes:
        self._pending += data
        cut = max(self._pending.rfind(end) + len(end) if self._pending.rfind(end) >= 0 else 0 for end in self._END)
        whole, self._pending = bytes(self._pending[:cut]), self._pending[cut:]
        return self._without_usage(whole)

    def flush(self) -> bytes:
        rest, self._pending = bytes(self._pending), bytearray()
        return self._without_usage(rest)

    @staticmethod
    def _without_usage(data: bytes) -> bytes:
        if b"usage" not in data:
            return data
        text = data.decode("utf-8", errors="surrogateescape")
        events = [e for e in _EVENT_END.split(text) if e]
        return "".join(e for e in events if not is_usage_chunk(e)).encode("utf-8", errors="surrogateescape")


_EVENT_END = re.compile(r"(?<=\r\n\r\n)|(?<=\n\n)")
