"""The HTML report in a real browser: headless Chromium loads it from disk with the network cut off.

The test reads the DOM Chromium rendered (``--dump-dom``) for the verdict, a
regression, the pass-rate chart showing the dip, and the hostile check name
shown as text; then it takes a screenshot. Without Chromium the test skips
locally with the reason and fails in CI (``CI`` set), where ``.ci/run``
installs it. ``EVALRUN_WRITE_SCREENSHOT=docs/report.png`` also copies the
screenshot there (that is how the README's picture is made).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from harness.browser import browse, chromium
from harness.history_runs import HOSTILE, commit_state, three_runs


def test_the_report_renders_in_chromium(project, tmp_path: Path) -> None:
    # One history store: the report's HTML from SQLite and from PostgreSQL is
    # checked alike in test_history_cli; here the browser renders it.
    chromium()  # skip before running anything when there is no browser
    p = project()
    three_runs(p, {})  # good, broken, good
    commit_state(p, "vanished")  # the latest run drops a baselined check: a regression
    latest = p.run("t1")
    assert latest.code == 3
    header = latest.out.splitlines()[0]  # "network: isolated (namespace), except ...", as this machine allows
    assert p.run("report", "--html", "report.html").code == 0
    page = (p.root / "report.html").resolve().as_uri()

    dom = browse(tmp_path, "--dump-dom", page).stdout
    assert 'data-script="ran"' in dom  # the inline script ran under the page's own policy
    assert re.search(r'<div id="verdict" class="bad">baseline regressed \(exit 3\)</div>', dom)
    assert '<ul class="regressions"><li>calc: check "kept" vanished (baseline: 1 assertion)</li>' in dom
    chart = re.search(r'<figure class="chart" data-chart="pass-rate" data-values="([^"]*)">(.*?)</figure>', dom, re.S)
    assert chart is not None and chart.group(1) == "100,100,75,100,100"  # the dip of the broken run
    assert "<svg" in chart.group(2) and "<polyline" in chart.group(2)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom and HOSTILE not in dom
    assert dom.count("<script") == 1
    assert "flaky" in dom and "stays green" in dom
    assert header.startswith("network: ") and re.search(rf'<div id="network" class="\w+">{re.escape(header)}</div>', dom)

    shot = tmp_path / "report.png"
    browse(tmp_path, "--window-size=1280,1500", "--hide-scrollbars", f"--screenshot={shot}", page)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a page was drawn, not a blank
    if os.environ.get("EVALRUN_WRITE_SCREENSHOT"):
        shutil.copyfile(shot, os.environ["EVALRUN_WRITE_SCREENSHOT"])
