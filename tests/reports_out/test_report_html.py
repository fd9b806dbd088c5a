"""The HTML report's content, rendered from history records (no browser: see test_report_browser for that)."""

from __future__ import annotations

import dataclasses

import re

from harness.history_data import results

from evalrun.history.records import GitInfo, make_record
from evalrun.reports_out.html import make_chart, render_report

HOSTILE = '<img src=x onerror="alert(1)">'


def page(*passes: bool) -> str:
    runs = [make_record(results(n, passed=p), GitInfo(f"{n:02d}" * 20, "main", False), "run")
            for n, p in enumerate(passes)]
    return render_report(runs)


def test_the_latest_run_is_shown_whole() -> None:
    html = page(True, False)
    assert '<div id="verdict" class="bad">failed (exit 1)</div>' in html
    assert '<li>alpha: check &#34;gone&#34; vanished (baseline: 2 assertions)</li>' in html
    assert "<td>beta</td><td class=\"status-skipped\">skipped</td><td>env KEY is not set</td>" in html
    assert "expected 3, got 2" in html
    assert "models: openai gpt-x, 2 calls answered, 42 tokens" in html
    assert "latency_ms = 101" in html
    assert "commit <span class=\"mono\">0101010101</span> on main" in html


def test_the_latest_run_says_whether_it_was_isolated_from_the_network() -> None:
    from evalrun.results import NetworkIsolation

    def shown(network: NetworkIsolation | None) -> str:
        run = dataclasses.replace(results(1), network=network)
        return render_report([make_record(run, GitInfo(), "run")])

    namespace = shown(NetworkIsolation(isolated=True, mechanism="namespace"))
    assert ('<div id="network" class="muted">network: isolated (namespace), except unix sockets bound to a path</div>'
            in namespace)
    refused = shown(NetworkIsolation(isolated=False, reason='tiers.t1 sets network = "host" <b>'))
    assert ('<div id="network" class="partial">network: not isolated: tiers.t1 sets network = &#34;host&#34; &lt;b&gt;'
            '</div>') in refused  # the warning's colour, and escaped as any text
    assert 'id="network"' not in shown(None)  # t3, or a run stored before evalrun recorded it: nothing claimed


def test_newly_failing_checks_come_first_with_since_when() -> None:
    html = page(True, True, False)
    attention = re.search(r'<section id="attention">(.*?)</section>', html, re.S).group(1)
    assert "newly failing" in attention and "alpha</td><td>one" in attention
    assert "failing since" in attention and "last passed at commit 0101010101" in attention
    table = re.search(r'<section id="checks">(.*?)</section>', html, re.S).group(1)
    assert table.index("<td>one</td>") < table.index("<td>two</td>")


def test_charts_cover_pass_rate_assertions_duration_tokens_and_every_numeric_metric() -> None:
    html = page(True, False, True)
    charts = dict(re.findall(r'data-chart="([^"]+)" data-values="([^"]*)"', html))
    assert charts == {
        "pass-rate": "100,50,100", "assertions": "4,4,4", "duration": "1.5,1.5,1.5", "tokens": "42,42,42",
        "metric:alpha:latency_ms": "100,101,102",  # "label" is text: not charted
    }


def test_scorer_text_is_escaped_everywhere() -> None:
    r = results(1, passed=False, evidence=HOSTILE)
    r.evals[0].checks[0] = dataclasses.replace(r.evals[0].checks[0], message=HOSTILE)
    r.evals[0].name = HOSTILE
    r.evals[0].metrics = {HOSTILE: 1}
    html = render_report([make_record(r, GitInfo(), "run")])
    assert HOSTILE not in html and "onerror" not in html.replace("onerror=&#34;", "")
    assert html.count("&lt;img src=x onerror=&#34;alert(1)&#34;&gt;") >= 4


def test_nothing_in_the_page_reaches_the_network() -> None:
    html = page(True, False)
    assert "default-src 'none'" in html
    assert not re.search(r'(src|href)\s*=\s*"(?!data:)[^"]', html)
    assert "http://" not in html and "https://" not in html


def test_a_chart_breaks_its_line_where_a_run_has_no_value() -> None:
    chart = make_chart("m", "m", [1.0, None, 3.0, 4.0], ["a", "b", "c", "d"])
    assert len(chart.segments) == 2 and chart.data_values == "1,,3,4"
    assert (chart.low, chart.high, chart.latest) == ("1", "4", "4")
    assert make_chart("e", "e", [None, None], ["a", "b"]).segments == []


def test_a_metric_past_a_floats_range_is_shown_and_left_off_the_charts() -> None:
    # 10**400 is a valid JSON number, so a valid metric; as a float it overflows (it crashed the page, exit 70).
    runs = []
    for n, huge in enumerate((10**400, 7, 10**400)):
        run = results(n)
        run.evals[0].metrics["huge"] = huge
        runs.append(make_record(run, GitInfo(), "run"))
    html = render_report(runs)
    assert 'id="chart-metric:alpha:huge"' in html or "alpha: huge" in html  # the metric's chart: one point, 7
    assert "huge = 1000000000" in html  # the latest run's value, as the report said it


def test_needs_attention_does_not_say_nothing_failed_beside_a_check_that_failed_earlier() -> None:
    # Failed at two commits, fixed at the next three: 60 % with red cells, neither failing now nor flaky (issue 34).
    html = page(False, False, True, True, True)
    attention = re.search(r'<section id="attention">(.*?)</section>', html, re.S).group(1)
    assert "no check fails or flips" not in attention
    assert "nothing failing now or flaky: 1 check failed earlier in these runs and passes now" in attention
    assert "<td>60%</td>" in re.search(r'<section id="checks">(.*?)</section>', html, re.S).group(1)


def test_a_failed_run_whose_checks_all_passed_does_not_headline_100_percent_alone() -> None:
    from evalrun.results import EvalResult, Status

    run = results(1)
    crashed = EvalResult(name="gamma", tier="t1", dir="evals/gamma", status=Status.ERROR, message="scorer crashed")
    run = dataclasses.replace(run, evals=[*run.evals, crashed], exit_code=1)
    html = render_report([make_record(run, GitInfo(), "run")])
    assert '<div id="verdict" class="bad">failed (exit 1)</div>' in html
    caption = re.search(r'checks passed \(% of checks run\) <span class="latest">(.*?)</span>', html).group(1)
    assert caption == "100% of the checks that ran; 1 eval failed without a failing check (gamma)"
    assert 'class="latest">100%<' in page(True)  # a passing run: the plain figure


def test_the_models_line_agrees_with_the_calls_listed_below_it() -> None:
    from evalrun.results import EvalResult, Status

    run = results(1)
    refused = EvalResult(name="gamma", tier="t2", dir="evals/gamma", status=Status.FAILED, message="no fixture",
                         models={"mode": "replay", "provider": None, "models": [], "calls": 0,
                                 "call_log": [{"method": "POST", "path": "/v1/chat/completions", "status": 404}]})
    html = render_report([make_record(dataclasses.replace(run, evals=[*run.evals, refused]), GitInfo(), "run")])
    section = html[html.index("<h3>gamma"):]
    assert "unknown provider" not in section and ", 0 calls," not in section
    assert "models: no provider answered, 0 calls answered of 1 made, 0 tokens (replay)" in section
    assert "1 model call: what was asked and answered" in section
