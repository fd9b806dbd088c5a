"""``make_session``: an ``evalrun.session.Session`` for a test that calls a command or the pipeline in-process."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from evalrun.reports_out.terminal import Console
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
