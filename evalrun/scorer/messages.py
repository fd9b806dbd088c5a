"""The text the scorer SDK writes: failure messages, evidence and the by-hand summary.

This module owns how ``evalrun.scorer`` shows values in a failure message
(a ``repr`` shortened at both ends), where two long values first differ, how
an exception and its traceback read, the limits on a message and on
evidence, and the one-line-per-check summary printed when a scorer runs by
hand. ``evalrun.scorer`` imports it on first use.

Like ``evalrun.scorer`` it is stdlib only and imports nothing from evalrun,
so a scorer needs none of evalrun's dependencies.
"""

from __future__ import annotations

import re

# typing costs ~3 ms to import; annotations are strings here, so only type
# checkers need it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Pattern

SHOW_LIMIT = 200  # one value in a failure message
MESSAGE_LIMIT = 2_000
EVIDENCE_LIMIT = 10_000


def show(value: Any, limit: int = SHOW_LIMIT) -> str:
    """repr, shortened to ``limit`` keeping both ends (differences often sit at the end)."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 -- a broken __repr__ must not hide the failure
        text = f"<{type(value).__name__} with a failing repr: {describe(exc)}>"
    return truncate(text, limit)


def truncate(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, its last quarter from the end, with the count dropped."""
    if len(text) <= limit:
        return text
    keep_tail = limit // 4
    dropped = len(text) - limit
    return f"{text[: limit - keep_tail]}...[{dropped} chars]...{text[-keep_tail:]}"


def first_difference(actual: Any, expected: Any) -> str:
    """For long strings and sequences whose reprs get shortened, say where they part."""
    if type(actual) is not type(expected) or not isinstance(actual, (str, bytes, list, tuple)):
        return ""
    if len(repr(actual)) <= SHOW_LIMIT and len(repr(expected)) <= SHOW_LIMIT:
        return ""
    for index, (a, e) in enumerate(zip(actual, expected)):
        if a != e:
            return f" (first difference at index {index}: expected {show(e, 60)}, got {show(a, 60)})"
    return f" (lengths differ: expected {len(expected)}, got {len(actual)})"


def show_pattern(pattern: str | Pattern[str]) -> str:
    """A regex as written, whether given as a string or compiled."""
    return show(pattern.pattern if isinstance(pattern, re.Pattern) else pattern)


def type_names(cls: type | tuple[type, ...]) -> str:
    """``ValueError``, or ``KeyError or IndexError`` for a tuple of types."""
    if isinstance(cls, tuple):
        return " or ".join(c.__name__ for c in cls)
    return cls.__name__


def describe(exc: BaseException) -> str:
    """``ValueError: boom``, or just ``ValueError`` when the message is empty."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def format_traceback(exc: BaseException) -> str:
    """The traceback of a check that crashed, as evidence: its end if it is too long."""
    import traceback  # only when a check crashed: it costs ~3 ms to import

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    # The end of a traceback is where the error is; keep that if it is long.
    return text if len(text) <= EVIDENCE_LIMIT else "..." + text[-(EVIDENCE_LIMIT - 3) :]


def summarize(report: dict[str, Any]) -> str:
    """The by-hand summary: one line per check, then metrics and a verdict."""
    lines: list[str] = []
    for item in report["checks"]:
        word = "PASS" if item["passed"] else "FAIL"
        count = item["assertions"]
        line = f"{word}  {item['name']}  ({count} assertion{'' if count == 1 else 's'})"
        message_lines = (item.get("message") or "").splitlines()
        if message_lines:
            line += f": {message_lines[0]}"
        lines.append(line)
        lines.extend(f"      {rest}" for rest in message_lines[1:])
        evidence_lines = (item.get("evidence") or "").splitlines()
        if evidence_lines:
            lines.append(f"      evidence: {evidence_lines[0]}")
            lines.extend(f"                {rest}" for rest in evidence_lines[1:])
    if report["metrics"]:
        lines.append("metrics: " + ", ".join(f"{k}={v!r}" for k, v in report["metrics"].items()))
    total = len(report["checks"])
    failed = sum(1 for c in report["checks"] if not c["passed"])
    if total == 0:
        lines.append("FAILED: no checks ran")
    elif failed:
        lines.append(f"FAILED: {failed} of {total} checks failed")
    else:
        lines.append(f"ok: {total} check{'' if total == 1 else 's'} passed")
    return "\n".join(lines) + "\n"
