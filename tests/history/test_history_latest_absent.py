"""``history --check`` after a run that did not run the check: it says what the latest run was (issue 34, item 7)."""

from __future__ import annotations

import io

from evalrun.reports_out.history_text import print_series
from evalrun.history.records import StoredCheck, StoredEval, StoredRun
from evalrun.history.series import check_series
from evalrun.reports_out.terminal import Console


def _run(n: int, status: str, checks: list[StoredCheck]) -> StoredRun:
    return StoredRun(run_id=f"run-{n}", tier="t1", started_at=f"2026-12-0{n}T10:00:00+00:00",
                     recorded_at=f"2026-12-0{n}T10:00:01+00:00", source="run", evalrun_version="0",
                     git_commit=f"{n:040x}", git_dirty=False, exit_code=0 if status == "passed" else 3,
                     evals=[StoredEval(name="calc", status=status, checks=checks)])


def _shown(runs: list[StoredRun]) -> str:
    [series] = check_series(runs, "calc", "stays green")
    out = io.StringIO()
    print_series(series, Console(out, env={"NO_COLOR": "1"}))
    return out.getvalue()


def test_a_latest_run_that_errored_before_the_check_is_named_not_passing_now() -> None:
    ok = StoredCheck(eval="calc", name="stays green", assertions=1, passed=True)
    out = _shown([_run(1, "passed", [ok]), _run(2, "error", [])])
    assert "passing now" not in out
    assert ("latest run run-2 (2026-12-02 10:00:00): the check did not run (calc error); "
            "before it, 1 of 1 runs passed") in out


def test_a_latest_run_that_ran_the_check_still_says_passing_now() -> None:
    ok = StoredCheck(eval="calc", name="stays green", assertions=1, passed=True)
    out = _shown([_run(1, "error", []), _run(2, "passed", [ok])])
    assert "passing now (1 of 1 runs passed)" in out and "latest run" not in out
