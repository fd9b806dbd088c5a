"""``evalrun replay serve``: the record/replay model proxy alone, in the foreground.

For recording or inspecting fixtures by hand, outside a tier run: the proxy
serves one eval whose fixtures are in ``--fixtures DIR``, on
``http://127.0.0.1:PORT`` (``--port 0``: any free port), and prints its URL,
the variables to export, one line per call, and at Ctrl-C a summary (calls,
tokens, models that answered, missing and unplayed fixtures).

In record and live modes the upstream is authenticated from evalrun's own
environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``); their values are
never printed and never written to a fixture.
"""

from __future__ import annotations

from dataclasses import dataclass
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from urllib.parse import urlsplit

from evalrun.errors import ExitCode, UsageError
from evalrun.models.scorer_env import endpoint_env
from evalrun.models.replay.fixtures import default_session
from evalrun.models.replay.proxy import MODES, ReplayProxy
from evalrun.reports_out.replay_text import serve_banner, serve_summary
from evalrun.session import Session
from evalrun.text import neutralise


@dataclass(frozen=True)
class ServeRequest:
    """``evalrun replay serve``: the fixtures folder, the mode, where record and live calls go, the port, the
    eval (session) name its fixtures are filed under."""

    fixtures: Path
    mode: str = "replay"
    upstream: str | None = None
    port: int = 0
    eval_name: str = "serve"


def serve(request: ServeRequest, session: Session, *, echo: Callable[[str], None] | None = None) -> int:
    """Run the proxy until Ctrl-C (or SIGTERM); return the exit code."""
    fixtures, mode, upstream, port, eval_name = (request.fixtures, request.mode, request.upstream, request.port,
                                                 request.eval_name)
    write_line = echo or _print

    def say(line: str) -> None:  # call lines and the summary name what clients and fixtures sent
        write_line(neutralise(line))

    _check_arguments(fixtures, mode, upstream, port, eval_name)
    proxy = ReplayProxy(
        mode,  # type: ignore[arg-type]  # checked above
        upstream=upstream,
        key_env=session.environ,
        redact_values=set(session.secrets.keys),  # its key values never reach a fixture or a line
        port=port,
        log=say,
    )
    try:
        proxy.start()
    except OSError as exc:
        raise UsageError(
            f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}); pick another or pass --port 0"
        ) from None
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        proxy.register_eval(eval_name, fixtures, default=True)
        try:  # Ctrl-C may come as soon as the banner is out: it ends the serving, not evalrun
            env = endpoint_env(proxy.endpoint)
            for line in serve_banner(mode, fixtures, proxy.endpoint, upstream, env, default_session(eval_name)):
                say(line)
            while True:
                # Short sleeps: a signal the kernel hands to another thread only
                # reaches Python's handler when the main thread wakes up.
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        report = proxy.eval_report(eval_name)
    finally:
        signal.signal(signal.SIGTERM, previous)
        proxy.stop()
    for line in serve_summary(report):
        say(line)
    return int(ExitCode.FAILED) if report.missing else int(ExitCode.OK)


def _check_arguments(fixtures: Path, mode: str, upstream: str | None, port: int, eval_name: str) -> None:
    if mode not in MODES:
        raise UsageError(f"--mode {mode!r}: unknown mode; use one of {', '.join(MODES)}")
    if mode == "replay" and not fixtures.is_dir():
        raise UsageError(f"--fixtures {fixtures}: no such folder; record fixtures first with --mode record")
    if fixtures.exists() and not fixtures.is_dir():
        raise UsageError(f"--fixtures {fixtures}: is a file; pass the folder that holds <session>/<index>.json")
    if upstream is not None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"--upstream {upstream!r}: not an http(s) URL; e.g. https://api.openai.com")
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: must be between 0 (any free port) and 65535")
    if not eval_name.strip() or "/" in eval_name:
        raise UsageError(f"--eval {eval_name!r}: must be a non-empty name without '/'")


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _print(line: str) -> None:
    print(line, file=sys.stdout, flush=True)
