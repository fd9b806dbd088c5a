"""An eval's model calls as text: ``evalrun show EVAL`` prints them, in order.

Each call: its number, session and index, the model, tokens and cost, the
fixture it was served from (or recorded to), then the request's messages, the
tool calls, and the answer. Texts come from a scorer's model calls and are
untrusted: every line is indented and control characters are shown as
``\\xNN``, so nothing can move the cursor or start a CI workflow command.
"""

from __future__ import annotations

from typing import Any

from evalrun.results import EvalResult
from evalrun.text import neutralise, plural

WIDE = 400  # characters of a text shown on one line before it is cut (the results file keeps up to 2,000)


def call_headline(call: dict[str, Any]) -> str:
    """``#3 weather-paris/0002 · gpt-4o-mini-2024-07-18 · 130+64 tokens · $0.0001 · 200``."""
    tokens = call.get("tokens") or {}
    parts = [f"#{call.get('n', '?')}" + (f" (run {call['run']})" if call.get("run") else "")
             + f" {call.get('session', '')}/{int(call.get('index') or 0):04d}"]
    parts.append(str(call.get("model") or "no model named"))
    parts.append(f"{tokens.get('input', 0)}+{tokens.get('output', 0)} tokens")
    if call.get("usd") is not None:
        parts.append(f"${float(call['usd']):.4f}")
    parts.append(f"HTTP {call.get('status', '?')}")
    return " · ".join(parts)


def transcript_lines(result: EvalResult) -> list[str]:
    """The eval's verdict line, then each of its model calls."""
    models = result.models or {}
    calls = models.get("call_log") or []
    lines = [f"{result.name}: {result.status.value}" + (f": {result.message}" if result.message else "")]
    failed = [c for c in result.checks if not c.passed]
    for c in failed:
        lines.append(f"  failed check: {c.name}" + (f": {c.message}" if c.message else ""))
    if not calls:
        why = "it made no model calls" if models else "no model calls were recorded for it"
        lines.append(f"  {why} in this run")
        return [neutralise(line) for line in lines]
    mode = models.get("mode") or "?"
    answered = models.get("calls", 0)
    made = len(calls) + int(models.get("calls_not_kept") or 0)
    lines.append(f"  {plural(made, 'model call')} ({mode}"
                 + (f", {answered} answered" if answered != made else "") + "), in order:")
    for call in calls:
        lines.append(f"  {call_headline(call)}")
        if call.get("fixture"):
            lines.append(f"    {'fixture (missing)' if call.get('error') else 'fixture'}: {call['fixture']}")
        for m in call.get("messages") or []:
            lines.append(f"    {m.get('role', '?')}: {_short(m.get('text') or '')}")
            for tc in m.get("tool_calls") or []:
                lines.append(f"      tool call {tc.get('name', '')}({_short(tc.get('arguments') or '')})")
        for tc in call.get("tool_calls") or []:
            lines.append(f"    → tool call {tc.get('name', '')}({_short(tc.get('arguments') or '')})")
        if call.get("answer"):
            lines.append(f"    → answer: {_short(call['answer'])}")
        if call.get("error"):
            lines.append(f"    → error: {_short(call['error'])}")
    if models.get("calls_not_kept"):
        lines.append(f"  ({models['calls_not_kept']} later calls were counted but not kept)")
    return [neutralise(line) for line in lines]


def _short(text: str) -> str:
    folded = " ⏎ ".join(part for part in str(text).splitlines() if part.strip()) if "\n" in str(text) else str(text)
    return folded if len(folded) <= WIDE else f"{folded[:WIDE]}… ({len(folded) - WIDE} more characters)"


def show_header(tier: str, started_at: str, path: str) -> str:
    """``t2 run of 2026-01-01T10:00:00Z (.evalrun/results-t2.json)``: which run ``evalrun show`` reads."""
    return f"{tier} run of {started_at} ({path})"
