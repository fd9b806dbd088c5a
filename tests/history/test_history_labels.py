"""History and the HTML report do not mislabel (issue 22): flaky means mixed outcomes where the code did not
change; a fixed regression reads as one; filtered runs stay out of the trends; the strips have a legend."""

from __future__ import annotations

import re
from dataclasses import replace

from harness.history_data import results

from evalrun.history.records import GitInfo, make_record
from evalrun.history.series import check_series, last_failure
from evalrun.reports_out.html import render_report
from evalrun.results import CheckRate, EvalResult, Status


def run_at(n: int, passed: bool, commit: str | None, dirty: bool = False, **selection):
    r = results(n, passed=passed)
    if selection:
        r = replace(r, selection=selection)
    return make_record(r, GitInfo(commit * 20 if commit else None, "main", dirty if commit else None), "run")


def one(runs):
    [series] = check_series(runs, "alpha", "one")
    return series


def test_a_check_broken_at_one_commit_and_fixed_by_a_revert_is_a_fixed_regression_not_flaky():
    runs = [run_at(0, True, "c1"), run_at(1, False, "c2"), run_at(2, False, "c3"), run_at(3, True, "c4")]
    series = one(runs)
    assert series.flaky is False
    text = last_failure(series).describe()
    assert text == (f"failed from commit c2c2c2c2c2 to commit c3c3c3c3c3, fixed at commit c4c4c4c4c4 "
                    f"({runs[1].run_id} to {runs[3].run_id})")


def test_a_check_that_flips_at_one_commit_is_flaky_and_a_run_without_commit_proves_nothing():
    assert one([run_at(0, True, "c1"), run_at(1, False, "c1"), run_at(2, True, "c1")]).flaky is True
    assert one([run_at(0, True, None), run_at(1, False, None), run_at(2, True, None)]).flaky is False
    assert one([run_at(0, True, "c1", dirty=True), run_at(1, False, "c1", dirty=True)]).flaky is False


def test_a_check_mixed_within_one_repeated_run_is_flaky():
    r = results(0, passed=True)
    alpha = r.evals[0]
    rated = [c if c.name != "one" else type(c)(name=c.name, assertions=c.assertions, passed=True,
                                                 rate=CheckRate(runs=5, passes=4, seen=5, flaky=True))
             for c in alpha.checks]
    r.evals[0] = replace(alpha, checks=rated)
    record = make_record(r, GitInfo("c9" * 20, "main", False), "run")
    assert (record.evals[0].checks[0].runs, record.evals[0].checks[0].passes) == (5, 4)
    assert one([record]).flaky is True


def test_failing_since_never_names_the_same_commit_twice_nor_a_missing_one():
    same = last_failure(one([run_at(0, True, "b3"), run_at(1, False, "b3")])).describe()
    assert same.count("b3b3b3b3b3") == 1 and "first bad after" not in same, same
    assert "it passed at the same commit in" in same
    none = last_failure(one([run_at(0, True, None), run_at(1, False, None)])).describe()
    assert " -" not in none and "no commit recorded" in none, none


def test_the_html_report_leaves_filtered_runs_out_of_the_trends_and_says_so():
    runs = [run_at(0, True, "c1"), run_at(1, True, "c2"), run_at(2, True, "c3", evals=["alpha"], tags=[])]
    html = render_report(runs)
    charts = dict(re.findall(r'data-chart="([^"]+)" data-values="([^"]*)"', html))
    assert charts["assertions"] == "4,4"  # the filtered run's totals are not a dip
    assert "1 of the 3 runs was filtered (--eval alpha): left out of the trends" in html
    assert 'class="partial">partial run: --eval alpha' in html
    assert "Trends over the last 2 whole runs" in html


def test_the_html_strips_have_a_legend_and_the_since_column_names_no_missing_commit():
    html = render_report([run_at(0, True, None), run_at(1, False, None)])
    attention = re.search(r'<section id="attention">(.*?)</section>', html, re.S).group(1)
    assert "first bad after -" not in attention and "no commit recorded" in attention
    assert 'class="legend muted">runs, oldest first:' in attention
    assert "passed" in attention and "not run (skipped, errored, filtered out" in attention


def test_a_repeated_eval_below_its_floor_shows_its_runs_not_exit_0():
    r = results(0, passed=False)
    alpha = r.evals[0]
    rated = [type(c)(name=c.name, assertions=c.assertions, passed=c.name != "one",
                     rate=CheckRate(runs=5, passes=2 if c.name == "one" else 5, seen=5)) for c in alpha.checks]
    r.evals[0] = replace(alpha, checks=rated, status=Status.FAILED, exit_code=0)
    html = render_report([make_record(r, GitInfo(), "run")])
    header = re.search(r"<h3>alpha .*?</h3>", html, re.S).group(0)
    assert "exit 0" not in header and "5 runs" in header, header
    assert "(2 of 5 runs)" in html
    assert isinstance(r.evals[0], EvalResult)


def test_history_check_without_a_tier_shows_only_the_runs_of_the_checks_tier(project):
    from harness import eval_entry, json_scorer

    proj = project({
        "manifest.toml": "[tiers.t1]\n[tiers.t2]\n" + eval_entry("a") + eval_entry("b", tier="t2"),
        "evals/a/score.py": json_scorer([{"name": "ca", "assertions": 1, "passed": True}]),
        "evals/b/score.py": json_scorer([{"name": "cb", "assertions": 1, "passed": True}]),
    })
    for tier in ("t1", "t2", "t1", "t2"):  # two runs of a tier, the same results, most likely the same second
        assert proj.run(tier).code in (0, 4)
    out = proj.run("history", "--check", "ca").out
    points = [ln for ln in out.splitlines() if ln.startswith("  20")]
    assert len(points) == 2 and all("passed" in ln for ln in points), out
    assert "- assertions" not in out
    report = proj.run("report", "--html", "r.html")
    assert report.code == 0, report.output
    assert "tier t2: the tier of the latest run in the history (name a tier to report another)" in report.out
    assert "tier t2: the tier of the latest run in the history" in (proj.root / "r.html").read_text()
