"""``evalrun t1|t2|t3`` and ``evalrun run --tier``: one tier through the pipeline."""

from __future__ import annotations

from evalrun.run.pipeline import run
from evalrun.run.requests import RunRequest
from evalrun.session import Session


def run_tier(request: RunRequest, session: Session) -> int:
    """Run one tier and return its exit code."""
    return run(request, session)
