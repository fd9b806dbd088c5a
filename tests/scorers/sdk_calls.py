"""A scorer that calls a model with the real openai and anthropic SDKs, in one scenario per run.

    python sdk_calls.py SCENARIO

In t3 it writes what every call got (answer, request id, error, HTTP attempts)
to ``observed/<scenario>.t3.json``; in t2 it writes ``observed/<scenario>.t2.json``
and checks that replay gave every call what it got when recorded. The test
(tests/cli/test_replay_sdks.py) reads both files.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import openai

from evalrun import scorer

if TYPE_CHECKING:
    import anthropic

SCENARIO = sys.argv[1]
TIER = os.environ["EVALRUN_TIER"]
OBSERVED = Path("observed")
GPT, CLAUDE = "gpt-4o-mini", "claude-3-5-haiku-latest"
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
attempts: list[str | None] = []


def count(request: httpx.Request) -> None:
    attempts.append(request.headers.get("x-stainless-retry-count"))


async def count_async(request: httpx.Request) -> None:
    count(request)


def gpt(timeout: float = 30, retries: int = 2) -> openai.OpenAI:
    client = httpx.Client(event_hooks={"request": [count]}, trust_env=False)
    return openai.OpenAI(timeout=timeout, max_retries=retries, http_client=client)


def claude(retries: int = 2) -> anthropic.Anthropic:
    import anthropic  # only the scenarios that call Claude: importing it costs seconds of CPU

    client = anthropic.DefaultHttpxClient(event_hooks={"request": [count]}, trust_env=False)
    return anthropic.Anthropic(timeout=30, max_retries=retries, http_client=client)


def status_errors() -> tuple[type[Exception], ...]:
    """The SDKs' errors for an HTTP status: anthropic's too once ``claude()`` has imported it."""
    anthropic = sys.modules.get("anthropic")
    return (openai.APIStatusError, anthropic.APIStatusError) if anthropic else (openai.APIStatusError,)


def own_path_cut(message: str, path: str) -> str:
    """The SDK's message without the client's own base path: the anthropic SDK (2.x) names the path it requested
    (``path: /t/<run token>/e/<eval>/v1/messages``), which is the proxy's per-run route of this eval (another
    token and another eval name in t3 and in t2), never part of the answer replayed; what follows it is."""
    api = path.find("/v1/")
    return message.replace(path, path[api:]) if api > 0 else message


def observe(label: str, call: Any) -> dict[str, Any]:
    start = len(attempts)
    try:
        value = call()
        seen: dict[str, Any] = {"label": label, "ok": True, "value": value}
    except status_errors() as exc:
        seen = {"label": label, "ok": False, "error": type(exc).__name__, "status": exc.status_code,
                "request_id": exc.response.headers.get("x-request-id") or exc.response.headers.get("request-id"),
                "body": exc.response.text[:300], "message": own_path_cut(str(exc), exc.request.url.path)[:300]}
    except Exception as exc:  # noqa: BLE001 - careless code under test swallows everything
        seen = {"label": label, "ok": False, "error": type(exc).__name__, "message": str(exc)[:300]}
    seen["attempts"] = len(attempts) - start
    seen["retry_counts"] = attempts[start:]
    return seen


def chat(client: openai.OpenAI, prompt: str, **kw: Any) -> list[Any]:
    done = client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": prompt}], **kw)
    return [done.choices[0].message.content, done._request_id]


def chat_stream(client: openai.OpenAI, prompt: str) -> list[Any]:
    stream = client.chat.completions.create(
        model=GPT, messages=[{"role": "user", "content": prompt}], stream=True, stream_options={"include_usage": True}
    )
    parts, usage = [], None
    for chunk in stream:
        parts += [c.delta.content or "" for c in chunk.choices]
        usage = chunk.usage.total_tokens if chunk.usage else usage
    return ["".join(parts), usage]


def tools(client: openai.OpenAI, prompt: str) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": prompt}]
    first = client.chat.completions.create(model=GPT, messages=messages, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    messages += [first.choices[0].message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 18})}]
    final = client.chat.completions.create(model=GPT, messages=messages, tools=TOOLS)
    return [call.function.name, json.loads(call.function.arguments), final.choices[0].message.content]


def responses(client: openai.OpenAI, prompt: str) -> list[Any]:
    done = client.responses.create(model="gpt-4.1", input=prompt)
    return [done.output_text, done._request_id]


def message(client: anthropic.Anthropic, prompt: str) -> list[Any]:
    done = client.messages.create(model=CLAUDE, max_tokens=50, messages=[{"role": "user", "content": prompt}])
    return [done.content[0].text, done._request_id]


def message_stream(client: anthropic.Anthropic, prompt: str) -> list[Any]:
    with client.messages.stream(model=CLAUDE, max_tokens=50, messages=[{"role": "user", "content": prompt}]) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
    return [text, final.usage.output_tokens]


def basics() -> list[dict[str, Any]]:
    first = Path("basics-prompt.txt").read_text().strip() if Path("basics-prompt.txt").exists() else "hello"
    o, a = gpt(), claude()
    return [
        observe("chat", lambda: chat(o, first)),
        observe("chat stream", lambda: chat_stream(o, "stream please")),
        observe("tool calls", lambda: tools(o, "weather in Paris?")),
        observe("responses", lambda: responses(o, "respond")),
        observe("anthropic message", lambda: message(a, "hi claude")),
        observe("anthropic stream", lambda: message_stream(a, "stream claude")),
    ]


def headers() -> list[dict[str, Any]]:
    o, a = gpt(retries=2), claude(retries=2)
    return [
        observe("500 not to be retried", lambda: chat(o, "[500-no-retry] first")),
        observe("the next call", lambda: chat(o, "second")),
        observe("429 retried after retry-after-ms", lambda: chat(o, "[429] third")),
        observe("anthropic 500 not to be retried", lambda: message(a, "[500-no-retry] claude")),
        observe("anthropic next call", lambda: message(a, "claude again")),
    ]


def timeout() -> list[dict[str, Any]]:
    o = gpt(timeout=1.0, retries=3)
    return [observe("slow first attempt", lambda: chat(o, "[slow-first] alpha")), observe("after it", lambda: chat(o, "beta"))]


def retry_plain_stream() -> list[dict[str, Any]]:
    """A client-timeout retry, a plain call, then a stream whose end comes well after its [DONE]."""
    o = gpt(timeout=1.0, retries=3)
    return [observe("slow first attempt", lambda: chat(o, "[slow-first] alpha")), observe("after it", lambda: chat(o, "beta")),
            observe("stream, slow tail", lambda: chat_stream(o, "[slow-tail] gamma"))]


def concurrent() -> list[dict[str, Any]]:
    prompts = [f"concurrent {n}" for n in range(4)]
    if TIER == "t3":  # recorded all at once, in whatever order the upstream finished them
        async def all_at_once() -> list[dict[str, Any]]:
            client = openai.AsyncOpenAI(max_retries=0, http_client=httpx.AsyncClient(
                event_hooks={"request": [count_async]}, trust_env=False))
            async def one(p: str) -> dict[str, Any]:
                done = await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": p}])
                return {"label": p, "ok": True, "value": [done.choices[0].message.content, done._request_id]}
            return list(await asyncio.gather(*(one(p) for p in prompts)))
        seen = asyncio.run(all_at_once())
    else:  # replayed one by one in the reverse order
        o = gpt()
        seen = [observe(p, lambda p=p: chat(o, p)) for p in reversed(prompts)]
    for s in seen:
        s.pop("attempts", None), s.pop("retry_counts", None)
    return sorted(seen, key=lambda s: s["label"])


def gzipped() -> list[dict[str, Any]]:
    o, a = gpt(), claude()
    return [
        observe("gzip chat", lambda: chat(o, "[gzip] zipped plain")),
        observe("gzip stream", lambda: chat_stream(o, "[gzip] zipped stream")),
        observe("gzip anthropic", lambda: message(a, "[gzip] zipped claude")),
    ]


def loner() -> list[dict[str, Any]]:
    return [observe("loner", lambda: chat(gpt(), "alone"))]


def bad_fixture() -> list[dict[str, Any]]:
    return [observe("bad fixture", lambda: chat(gpt(retries=3), "hello"))]


SCENARIOS = {"basics": basics, "headers": headers, "timeout": timeout, "concurrent": concurrent, "gzip": gzipped,
             "retry-plain-stream": retry_plain_stream, "loner": loner, "bad-fixture": bad_fixture, "unreachable": bad_fixture}

seen = SCENARIOS[SCENARIO]()
OBSERVED.mkdir(exist_ok=True)
(OBSERVED / f"{SCENARIO}.{TIER}.json").write_text(json.dumps(seen, indent=1))
if TIER == "t2" and (OBSERVED / f"{SCENARIO}.t3.json").exists():
    recorded = {s["label"]: s for s in json.loads((OBSERVED / f"{SCENARIO}.t3.json").read_text())}
    for s in seen:
        with scorer.check(f"{SCENARIO}: {s['label']} gets what it got when recorded") as c:
            was = dict(recorded.get(s["label"], {}))
            now = dict(s)
            if SCENARIO in ("timeout", "retry-plain-stream"):  # the recording waited for a retry; replay answers the first attempt
                for d in (was, now):
                    d.pop("attempts", None), d.pop("retry_counts", None)
            c.equal(now, was)
else:
    with scorer.check(f"{SCENARIO}: the calls were made") as c:
        c.evidence(json.dumps(seen))
        c.true(bool(seen))
