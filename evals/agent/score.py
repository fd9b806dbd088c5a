"""Scorer of the agent: the right tools, with the right arguments, and an answer built on their results.

Each task runs in its own replay session (``X-Evalrun-Session``), so its model
calls replay from ``fixtures/<session>/``. Every check is deterministic: the
tool calls are compared exactly, and the final answer must contain the numbers
the local tools computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import json

from agent import TOOLS, AgentError, AgentRun, convert_currency, get_weather, run_agent

from evalrun import scorer


@dataclass(frozen=True)
class Task:
    session: str
    prompt: str
    calls: list[tuple[str, dict[str, Any]]]
    facts: list[str]  # what the answer must say, computed by the tools themselves


TASKS = [
    Task(
        "weather-paris",
        "What's the weather in Paris right now?",
        [("get_weather", {"city": "Paris"})],
        [str(get_weather("Paris")["temp_c"]), get_weather("Paris")["conditions"]],
    ),
    Task(
        "convert-usd-eur",
        "How much is 250 USD in EUR?",
        [("convert_currency", {"amount": 250, "from_currency": "USD", "to_currency": "EUR"})],
        [f"{convert_currency(250, 'USD', 'EUR')['result']:.2f}"],
    ),
    Task(
        "trip-tokyo",
        "I'm flying to Tokyo tomorrow: what's the weather in Tokyo, and how much is 300 USD in JPY?",
        [
            ("get_weather", {"city": "Tokyo"}),
            ("convert_currency", {"amount": 300, "from_currency": "USD", "to_currency": "JPY"}),
        ],
        [str(get_weather("Tokyo")["temp_c"]), f"{convert_currency(300, 'USD', 'JPY')['result']:.2f}"],
    ),
]


def _run(task: Task) -> tuple[AgentRun | None, str | None]:
    try:
        return run_agent(task.prompt, session=task.session), None
    except AgentError as exc:
        return None, str(exc)


for task in TASKS:
    run, error = _run(task)
    with scorer.check(f"{task.session}: dispatches the right tools with the right arguments") as c:
        c.true(run is not None, f"the agent failed: {error}")
        c.equal(run.tool_calls, task.calls)
        c.equal(run.model_calls, 2, "one turn of tool calls, then the answer")
    with scorer.check(f"{task.session}: the final answer uses the tool results") as c:
        c.true(run is not None, f"the agent failed: {error}")
        for fact in task.facts:
            c.contains(run.answer, fact, f"the answer does not say {fact!r}: {run.answer!r}")
    if task.session == "trip-tokyo":
        with scorer.check(f"{task.session}: the final answer is truthful about the tools' results") as c:
            c.true(run is not None, f"the agent failed: {error}")
            results = [{"tool": name, "arguments": args, "result": TOOLS[name](**args)} for name, args in run.tool_calls]
            c.judge(
                run.answer,
                "The answer states the tools' results truthfully: every figure it gives matches what the tools "
                "returned, and it claims nothing the tools did not return.",
                ground_truth=json.dumps(results, sort_keys=True),
            )
    if run is not None:
        scorer.metric(f"{task.session}.model_calls", run.model_calls)
