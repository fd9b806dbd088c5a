"""Deciding the one exit code of a run, in the README's order of precedence.

Usage and configuration errors (2) never reach this point: they are raised as
``EvalrunError`` before any scorer starts. Of the rest, the first that applies
wins: interrupted (130), a failure (1), a regression (3), something not checked
(4), nothing selected (5), else 0. A skip is never a pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalrun.errors import ExitCode
from evalrun.results import BaselineComparison, EvalResult, Status


def decide_exit_code(
    results: Sequence[EvalResult], comparison: BaselineComparison | None, interrupted: bool
) -> ExitCode:
    if interrupted:
        return ExitCode.INTERRUPTED
    if any(r.status.is_failure for r in results):
        return ExitCode.FAILED
    if comparison is not None and comparison.regressions:
        return ExitCode.REGRESSED
    if any(r.status.is_unchecked for r in results):
        return ExitCode.UNCHECKED
    if comparison is not None and any(change.fails for change in comparison.undecided):
        return ExitCode.UNCHECKED  # too_little_data = "fail": a comparison that cannot tell is not a pass
    if not results:
        return ExitCode.NOTHING_SELECTED
    assert all(r.status is Status.PASSED for r in results)
    return ExitCode.OK

