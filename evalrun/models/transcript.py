"""A compact record of one model call: what was asked, what was answered, by which model, at what cost.

The proxy makes one per call it sees (replayed, recorded or live, answered or
refused), in order; the run keeps them in the eval's ``models.call_log``, so
the HTML report and ``evalrun show`` can print an eval's calls whichever way
the run was made. A record is bounded: each text is cut to ``TEXT_CHARS``, a
call keeps at most ``MAX_MESSAGES`` messages (the system prompt and the last
ones) and ``MAX_TOOL_CALLS`` tool calls; where a fixture holds the whole
exchange, the record names it (``fixture``) instead of copying its bodies.
Chat Completions (OpenAI and compatible) and Messages (Anthropic) are read;
any other body is shown as its path and status only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TEXT_CHARS = 2_000  # characters kept of one message, argument list or answer
MAX_MESSAGES = 12  # per call: the first (system, usually) and the last ones
MAX_TOOL_CALLS = 16
MAX_CALLS = 200  # per eval run: the first ones; later calls are counted, not kept


def call_record(
    *,
    number: int,
    session: str,
    index: int,
    provider: str,
    method: str,
    path: str,
    request: bytes | None,
    response: bytes | None,
    stream: Iterable[str] = (),
    status: int,
    model: str | None = None,
    tokens: tuple[int, int] = (0, 0),
    usd: float | None = None,
    fixture: Path | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The record of one call; ``request``/``response`` are the raw bodies (JSON or not)."""
    asked = _json(request)
    record: dict[str, Any] = {
        "n": number,
        "session": session,
        "index": index,
        "provider": provider or None,
        "route": f"{method} {path.split('?', 1)[0]}",
        "status": status,
        "model": model or (asked.get("model") if isinstance(asked, dict) else None),
        "tokens": {"input": tokens[0], "output": tokens[1]},
    }
    if usd is not None:
        record["usd"] = round(usd, 10)
    if fixture is not None:
        record["fixture"] = str(fixture)
    if error:
        record["error"] = _cut(error)
    if isinstance(asked, dict):
        record["messages"] = _messages(asked)
        tools = asked.get("tools")
        if isinstance(tools, list) and tools:
            record["tools_offered"] = [_tool_name(t) for t in tools[:MAX_TOOL_CALLS]]
    answer = _answer(_json(response), list(stream))
    if answer:
        record.update(answer)
    return record


def _json(body: bytes | None) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _cut(text: str, limit: int = TEXT_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more characters)"


def _text_of(content: Any) -> str:
    """A message's content as text: a string, or the text parts of a list (others named by their type)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                kind = part.get("type")
                if isinstance(part.get("text"), str):
                    parts.append(part["text"])
                elif kind == "tool_result":
                    parts.append(f"[tool result {part.get('tool_use_id', '')}] {_text_of(part.get('content'))}")
                elif kind == "tool_use":
                    parts.append(f"[tool call {part.get('name', '')}] {_args(part.get('input'))}")
                else:
                    parts.append(f"[{kind or 'part'}]")
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)[:TEXT_CHARS]


def _args(value: Any) -> str:
    return _cut(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


def _tool_calls(calls: Any) -> list[dict[str, str]]:
    out = []
    for call in (calls if isinstance(calls, list) else [])[:MAX_TOOL_CALLS]:
        if not isinstance(call, dict):
            continue
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        out.append({"name": str(function.get("name", "")), "arguments": _args(function.get("arguments", function.get("input")))})
    return out


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        inner = tool.get("function") if isinstance(tool.get("function"), dict) else tool
        return str(inner.get("name", "?"))
    return "?"


def _messages(asked: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if isinstance(asked.get("system"), (str, list)):  # Anthropic's system prompt
        messages.append({"role": "system", "text": _cut(_text_of(asked["system"]))})
    raw = asked.get("messages")
    if not isinstance(raw, list):
        raw = asked.get("input") if isinstance(asked.get("input"), list) else []
        if isinstance(asked.get("input"), str):
            raw = [{"role": "user", "content": asked["input"]}]
    for m in raw:
        if not isinstance(m, dict):
            continue
        entry: dict[str, Any] = {"role": str(m.get("role", m.get("type", "?"))), "text": _cut(_text_of(m.get("content")))}
        if m.get("tool_calls"):
            entry["tool_calls"] = _tool_calls(m["tool_calls"])
        if m.get("tool_call_id"):
            entry["tool_call_id"] = str(m["tool_call_id"])
        messages.append(entry)
    if len(messages) > MAX_MESSAGES:
        left = len(messages) - MAX_MESSAGES
        messages = [messages[0], {"role": "…", "text": f"{left} messages not kept"}, *messages[-(MAX_MESSAGES - 1):]]
    return messages


def _answer(body: Any, stream: list[str]) -> dict[str, Any]:
    """``{"answer": text, "tool_calls": [...], "finish": reason}`` from a JSON body or an SSE stream."""
    if isinstance(body, dict):
        if isinstance(body.get("error"), dict):
            return {"error": _cut(str(body["error"].get("message", "")))}
        if body.get("error"):
            return {"error": _cut(str(body["error"]))}
        choices = body.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            message = choices[0].get("message")
            message = message if isinstance(message, dict) else {}
            out: dict[str, Any] = {"answer": _cut(_text_of(message.get("content")))}
            if message.get("tool_calls"):
                out["tool_calls"] = _tool_calls(message["tool_calls"])
            out["finish"] = choices[0].get("finish_reason")
            return out
        content = body.get("content")
        if isinstance(content, list):  # Anthropic Messages
            text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
            calls = [{"name": str(p.get("name", "")), "arguments": _args(p.get("input"))}
                     for p in content if isinstance(p, dict) and p.get("type") == "tool_use"][:MAX_TOOL_CALLS]
            return {"answer": _cut(text), **({"tool_calls": calls} if calls else {}), "finish": body.get("stop_reason")}
        if isinstance(body.get("output_text"), str):
            return {"answer": _cut(body["output_text"])}
        return {}
    if stream:
        return _streamed_answer(stream)
    return {}


def _streamed_answer(stream: list[str]) -> dict[str, Any]:
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    for chunk in stream:
        for line in chunk.splitlines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if not data or data == "[DONE]":
                continue
            try:
                event = json.loads(data)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            choices = event.get("choices")
            for choice in choices if isinstance(choices, list) else []:
                if not isinstance(choice, dict):
                    continue
                delta = choice.get("delta")
                delta = delta if isinstance(delta, dict) else {}
                if isinstance(delta.get("content"), str):
                    text.append(delta["content"])
                tool_deltas = delta.get("tool_calls")
                for call in tool_deltas if isinstance(tool_deltas, list) else []:
                    if isinstance(call, dict):
                        index = call.get("index")
                        slot = calls.setdefault(index if isinstance(index, int) else 0, {"name": "", "arguments": ""})
                        function = call.get("function")
                        function = function if isinstance(function, dict) else {}
                        slot["name"] += str(function.get("name") or "")
                        slot["arguments"] += str(function.get("arguments") or "")
                finish = choice.get("finish_reason") or finish
            delta = event.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("text"), str):  # Anthropic's text_delta
                text.append(delta["text"])
    out: dict[str, Any] = {"answer": _cut("".join(text))}
    if calls:
        out["tool_calls"] = [{"name": c["name"], "arguments": _cut(c["arguments"])} for _, c in sorted(calls.items())]
    if finish:
        out["finish"] = finish
    return out
