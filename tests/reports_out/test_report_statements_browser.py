"""The HTML report's statements agree with the results, read from the DOM headless Chromium rendered (issue 34 item 6):
a failed run with a check fixed earlier (60 %), an eval that errored before any check, and a call with no answer."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from harness.browser import browse
from harness.history_data import results

from evalrun.history.records import GitInfo, make_record
from evalrun.reports_out.html import render_report
from evalrun.results import EvalResult, Status


def test_a_failed_runs_page_does_not_contradict_itself_in_chromium(tmp_path: Path) -> None:
    runs = [make_record(results(n, passed=n >= 2), GitInfo(f"{n:02d}" * 20, "main", False), "run") for n in range(5)]
    latest = results(5)
    crashed = EvalResult(name="gamma", tier="t1", dir="evals/gamma", status=Status.ERROR, message="scorer crashed")
    refused = EvalResult(name="delta", tier="t1", dir="evals/delta", status=Status.FAILED, message="no fixture",
                         models={"mode": "replay", "provider": None, "models": [], "calls": 0,
                                 "call_log": [{"method": "POST", "path": "/v1/chat/completions", "status": 404}]})
    latest = replace(latest, evals=[*latest.evals, crashed, refused], exit_code=1)
    runs.append(make_record(latest, GitInfo("05" * 20, "main", False), "run"))
    page = tmp_path / "report.html"
    page.write_text(render_report(runs), encoding="utf-8")
    dom = browse(tmp_path, "--dump-dom", page.as_uri()).stdout
    assert re.search(r'<div id="verdict" class="bad">failed \(exit 1\)</div>', dom)
    attention = re.search(r'<section id="attention">(.*?)</section>', dom, re.S).group(1)
    assert "no check fails or flips" not in attention  # alpha/one failed in 2 of 6 runs
    assert "1 check failed earlier in these runs and passes now" in attention
    assert "100% of the checks that ran; 2 evals failed without a failing check (gamma, delta)" in dom
    assert "unknown provider" not in dom and "0 calls answered of 1 made" in dom and "1 model call:" in dom
