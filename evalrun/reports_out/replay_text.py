"""``evalrun replay serve``'s lines: the banner (where the proxy listens, what to export) and the summary at Ctrl-C.

The command runs the proxy and prints these lines neutralised (they name what
clients and fixtures sent); the proxy's own call lines are its to say.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalrun.errors import file_label
from evalrun.models.replay.state import ProxyEvalReport
from evalrun.text import plural

ANY_UPSTREAM = "https://api.openai.com / https://api.anthropic.com"  # where record and live calls go unless told


def serve_banner(
    mode: str, fixtures: Path, endpoint: str, upstream: str | None, env: Mapping[str, str], session: str
) -> list[str]:
    """Where the proxy listens, where its calls go (record, live), the variables a client exports, its session."""
    lines = [f"evalrun replay: {mode} proxy for {file_label(fixtures)} on {endpoint} (Ctrl-C to stop)"]
    if mode != "replay":
        lines.append(f"evalrun replay: upstream {upstream or ANY_UPSTREAM}")
    lines += [f"  export {name}={value}" for name, value in env.items()]
    lines.append(f"  (sessions: send an X-Evalrun-Session header; without one the session is {session!r})")
    return lines


def serve_summary(report: ProxyEvalReport) -> list[str]:
    """``evalrun replay: 2 calls, 30 tokens (20 in, 10 out), provider openai, models m``, then what was missing or
    left unplayed."""
    return [
        f"evalrun replay: {plural(report.calls, 'call')}, "
        f"{report.total_tokens} tokens ({report.input_tokens} in, {report.output_tokens} out), "
        f"provider {report.provider or '-'}, models {', '.join(report.models) or '-'}",
        *(f"  {message}" for message in (*report.missing, *report.unplayed)),
    ]
