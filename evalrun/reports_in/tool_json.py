"""What the native readers of eval tools' own logs share (Inspect AI, promptfoo).

Those logs are JSON written by a tool, not by evalrun's contract: they are
read leniently (NaN is allowed: Inspect writes it for an undefined stderr),
and every field is taken only if it has the type evalrun needs, so a log of
another version, or a hostile one, gives checks or one line, never a crash.
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalrun.errors import ReportError
from evalrun.text import one_line, shorten

TOOL_LOG_LIMIT = 256 * 1024 * 1024  # bytes of one tool's log file: they hold every model answer
TOOL_LOG_WHAT = "one tool log"
METRIC_LIMIT = 1000  # metrics carried over from one log: a dashboard's worth, not a dump


def load_json(raw: bytes, where: str, fix: str) -> Any:
    """``raw`` as JSON, or ReportError ``{where}: not JSON (...); {fix}``."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ReportError(f"{where}: nested too deeply to read; {fix}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        text = str(exc)
        if "integer string conversion" in text:
            text = "a number has more digits than Python reads (4300)"
        raise ReportError(f"{where}: not JSON ({shorten(one_line(text), 200)}); {fix}") from None


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    """``value`` if it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def scalar_text(value: Any, limit: int = 200) -> str:
    """A scalar as it reads in a name (``abc``, ``3``, ``true``); anything else as compact JSON, cut."""
    if isinstance(value, str):
        return shorten(one_line(value), limit)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return shorten(str(value), limit) if abs(value) < 10**50 else shorten(f"{value:.3e}", limit)
    if isinstance(value, float):
        return repr(value)
    try:
        return shorten(json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str), limit)
    except (ValueError, TypeError, RecursionError):
        return "?"


def metric_value(value: Any) -> float | int | None:
    """A metric as evalrun records it: a finite number, else None (NaN, text, objects are left out)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) < 2**63 else None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None
