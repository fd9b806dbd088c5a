"""``make_session``: an ``evalrun.session.Session`` for a test that calls a command or the run in-process;
``make_context``: the ``evalrun.run.context.RunContext`` of a run of one tier over such a session."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from evalrun.reports_out.terminal import Console
from evalrun.run.context import RunContext
from evalrun.session import Session


def make_session(
    manifest_path: Path | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    console: Console | None = None,
    stream: IO[str] | None = None,
) -> Session:
    """A session over ``environ`` (default: empty, so nothing of the test's own environment leaks in).

    ``console``: one the test reads (default: a plain one writing to ``stream``, or to a fresh ``StringIO``).
    """
    environ = {} if environ is None else environ
    if console is None:
        console = Console(stream if stream is not None else io.StringIO(), env=environ)
    return Session(environ, manifest_path, console=console)


def make_context(
    manifest_path: Path,
    environ: Mapping[str, str] | None = None,
    *,
    tier: str = "t1",
    console: Console | None = None,
    stream: IO[str] | None = None,
) -> RunContext:
    """The ``RunContext`` a run of ``tier`` of the manifest at ``manifest_path`` builds, over ``make_session``'s session."""
    return RunContext.build(make_session(manifest_path, environ, console=console, stream=stream), tier)
