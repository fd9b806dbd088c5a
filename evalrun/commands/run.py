"""``evalrun t1|t2|t3`` and ``evalrun run --tier``: one tier through the pipeline."""

from __future__ import annotations

import os

from evalrun.pipeline import RunRequest, run
from evalrun.reports_out.terminal import Console


def run_tier(request: RunRequest, console: Console) -> int:
    """Run one tier and return its exit code."""
    return run(request, console, os.environ)
