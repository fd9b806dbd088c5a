"""A small tool-calling agent: the subject that evalrun's own evals run against.

It talks to an OpenAI-style ``/chat/completions`` API at ``OPENAI_BASE_URL``
(with ``OPENAI_API_KEY``), offers the model two tools implemented here,
``get_weather(city)`` and ``convert_currency(amount, from_currency,
to_currency)``, runs every tool call the model makes, and loops until the
model answers without calling a tool.

    python agent.py "How much is 250 USD in EUR?"
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import httpx

MODEL = os.environ.get("AGENT_MODEL", "gpt-4o-mini")
SYSTEM = "You are a travel assistant. Use the tools for weather and money; never guess numbers."

WEATHER = {
    "paris": {"city": "Paris", "temp_c": 18, "conditions": "light rain"},
    "tokyo": {"city": "Tokyo", "temp_c": 24, "conditions": "clear"},
    "cairo": {"city": "Cairo", "temp_c": 33, "conditions": "sunny"},
}
USD_PER_UNIT = {"USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0065}

TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "convert_currency",
            "description": "Convert an amount of money between currencies (ISO codes).",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number"},
                    "from_currency": {"type": "string"},
                    "to_currency": {"type": "string"},
                },
                "required": ["amount", "from_currency", "to_currency"],
            },
        },
    },
]


class AgentError(Exception):
    """The agent could not finish: the model was unreachable, refused, or never answered."""


@dataclass
class AgentRun:
    answer: str
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    model_calls: int = 0


def get_weather(city: str) -> dict[str, Any]:
    return WEATHER.get(city.lower(), {"city": city, "error": "unknown city"})


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict[str, Any]:
    rate_from, rate_to = USD_PER_UNIT.get(from_currency.upper()), USD_PER_UNIT.get(to_currency.upper())
    if rate_from is None or rate_to is None:
        return {"error": f"unknown currency {from_currency if rate_from is None else to_currency}"}
    result = round(amount * rate_from / rate_to, 2)
    return {"amount": amount, "from": from_currency, "to": to_currency, "result": result}


TOOLS = {"get_weather": get_weather, "convert_currency": convert_currency}


def run_agent(task: str, *, session: str | None = None, max_turns: int = 6) -> AgentRun:
    """Run ``task`` to a final answer; ``session`` names the replay session of its model calls."""
    base = os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1").rstrip("/")
    key = os.environ.get("OPENAI_API_KEY", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if session:
        headers["X-Evalrun-Session"] = session
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
    run = AgentRun(answer="")
    with httpx.Client(timeout=60, headers=headers) as client:
        for _ in range(max_turns):
            message = _ask(client, base, messages)
            run.model_calls += 1
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                run.answer = message.get("content") or ""
                return run
            for call in calls:
                name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
                run.tool_calls.append((name, args))
                tool = TOOLS.get(name)
                result = tool(**args) if tool else {"error": f"no tool {name}"}
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
    raise AgentError(f"no final answer after {max_turns} model calls")


def _ask(client: httpx.Client, base: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"model": MODEL, "messages": messages, "tools": TOOL_SCHEMAS, "temperature": 0}
    try:
        response = client.post(f"{base}/chat/completions", json=body)
    except httpx.HTTPError as exc:
        raise AgentError(f"cannot reach the model at {base}: {exc.__class__.__name__}: {exc}") from None
    if response.status_code != 200:
        try:
            detail = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            detail = response.text[:200]
        raise AgentError(f"the model answered HTTP {response.status_code}: {detail}")
    return response.json()["choices"][0]["message"]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print('usage: python agent.py "TASK"', file=sys.stderr)
        return 2
    try:
        run = run_agent(argv[0])
    except AgentError as exc:
        print(f"agent: {exc}", file=sys.stderr)
        return 1
    for name, args in run.tool_calls:
        print(f"tool: {name}({json.dumps(args)})")
    print(run.answer)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
