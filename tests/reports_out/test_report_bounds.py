"""The HTML page is bounded whatever the history holds: 30,000 checks with 1 KB names over three runs."""

from __future__ import annotations

from evalrun.history.records import GitInfo, make_record
from evalrun.reports_out.html import NAME_SHOWN, PAGE_CHECK_ROWS, render_report
from evalrun.results import CheckResult, EvalResult, RunResults, Status

CHECKS = 30_000


def _run(n: int, failing: int) -> RunResults:
    checks = [
        CheckResult(name=f"{i:05d} " + "x" * 1000, assertions=1, passed=i != failing,
                    message=None if i != failing else "expected 1, got 2")
        for i in range(CHECKS)
    ]
    return RunResults(
        evalrun_version="0", tier="t1", manifest="manifest.toml",
        started_at=f"2026-12-01T03:00:0{n}+00:00", finished_at=f"2026-12-01T03:00:0{n}+00:00",
        evals=[EvalResult(name="huge", tier="t1", dir="evals/huge", status=Status.FAILED, checks=checks, exit_code=1)],
        exit_code=1,
    )


def test_a_page_of_30000_checks_with_1_kb_names_is_bounded_and_says_what_it_left_out() -> None:
    runs = [make_record(_run(n, failing=29_999), GitInfo(f"{n:02d}" * 20, "main", False), "run") for n in range(3)]
    html = render_report(runs)
    # Unbounded, the names alone are 3 tables x 30,000 x 1 KB: about 90 MB. Bounded: the rows shown x the name shown.
    assert len(html.encode()) < 2 * PAGE_CHECK_ROWS * (NAME_SHOWN + 2_000)
    assert f"30,000 checks in these runs: the {PAGE_CHECK_ROWS:,} that need attention first are shown" in html
    assert f"{CHECKS - PAGE_CHECK_ROWS:,} more checks not shown".replace(",", "") in html.replace(",", "")
    # the failing check is among those shown, though it is the last of 30,000: attention first
    assert "29999 " + "x" * (NAME_SHOWN - 7) + "…" in html
    assert "expected 1, got 2" in html
    assert "x" * (NAME_SHOWN + 1) not in html  # no name shown whole past the bound
