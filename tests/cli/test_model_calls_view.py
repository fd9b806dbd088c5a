"""The model's answers where people look (issue 22): every call of an eval in order, in the HTML report (checked in
headless Chromium) and in ``evalrun show``, for replayed, recorded and live runs; redacted, escaped, bounded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import eval_entry
from harness.agent_project import ENV, agent_project
from harness.browser import browse, chromium
from harness.fakes_upstream import FakeUpstream

HOSTILE = '<img src=x onerror="alert(1)">'
SECRET = "sk-test-evalrun-SECRET-0123456789abcdef"


def _poison_answer(root: Path, rel: str, text: str) -> None:
    """Put ``text`` in a committed fixture's final answer (the agent's checks may then fail: fine here)."""
    path = root / "evals/agent/fixtures" / rel
    data = json.loads(path.read_text())
    data["response"]["body"]["choices"][0]["message"]["content"] += " " + text
    path.write_text(json.dumps(data))


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    root = tmp_path_factory.mktemp("calls")
    proj = agent_project(root)
    _poison_answer(root, "@nano/weather-paris/0002.json", f"{HOSTILE} {SECRET}")
    run = proj.run("t2", env={**ENV, "OPENAI_API_KEY": SECRET})
    report = proj.run("report", "--html", "report.html", env={"OPENAI_API_KEY": SECRET})
    return proj, run, report


def test_every_call_of_a_replayed_run_is_in_the_results_in_order_redacted(replayed) -> None:
    proj, run, _ = replayed
    mini = proj.eval_result("triage[mini]", "t2")["models"]
    log = mini["call_log"]
    assert [c["n"] for c in log] == list(range(1, 8)) and mini["calls"] == 7
    assert [(c["session"], c["index"]) for c in log[:2]] == [("weather-paris", 1), ("weather-paris", 2)]
    first, second = log[0], log[1]
    assert first["fixture"] == "evals/agent/fixtures/@mini/weather-paris/0001.json"
    assert first["messages"][1] == {"role": "user", "text": "What's the weather in Paris right now?"}
    assert first["tool_calls"] == [{"name": "get_weather", "arguments": '{"city":"Paris"}'}]
    assert second["answer"].startswith("It is 18°C in Paris") and second["model"] == "gpt-4o-mini-2024-07-18"
    assert second["tokens"]["input"] > 0 and second["usd"] > 0
    assert any(c["session"] == "judge" for c in log)
    text = (proj.root / ".evalrun/results/t2.json").read_text()
    assert SECRET not in text and SECRET not in run.output


def test_evalrun_show_prints_an_eval_s_calls_in_order(replayed) -> None:
    proj, *_ = replayed
    shown = proj.run("show", "triage[nano]", env={"OPENAI_API_KEY": SECRET})
    assert shown.code == 0, shown.output
    out = shown.out
    assert "7 model calls (replay), in order:" in out
    heads = [ln for ln in out.splitlines() if ln.startswith("  #")]
    assert heads[0].startswith("  #1 weather-paris/0001 · gpt-4.1-nano-2025-04-14 · ") and "HTTP 200" in heads[0]
    assert len(heads) == 7
    assert "    user: What's the weather in Paris right now?" in out
    assert '    → tool call get_weather({"city":"Paris"})' in out
    assert "    → answer: It is 18°C in Paris" in out
    assert SECRET not in out
    both = proj.run("show", "triage").out  # the eval: each of its cells
    assert "triage[mini]: " in both and "triage[nano]: " in both
    missing = proj.run("show", "nope")
    assert missing.code == 2 and "show nope: no such eval in manifest.toml; known evals: triage" in missing.err


def test_the_html_report_shows_every_call_with_its_answer_escaped_and_bounded(replayed, tmp_path) -> None:
    chromium()  # skip loudly when there is no browser
    proj, _, report = replayed
    assert report.code == 0, report.output
    page = proj.root / "report.html"
    html = page.read_text()
    assert SECRET not in html and HOSTILE not in html
    assert len(html.encode()) < 300_000  # two evals of seven calls: small; PAGE_CALL_CHARS bounds any page
    assert not re.search(r'(src|href)\s*=\s*"(?!data:|#)[^"]', html)  # self-contained: links are in-page only
    dom = browse(tmp_path, "--dump-dom", page.resolve().as_uri()).stdout
    assert 'data-script="ran"' in dom and dom.count("<script") == 1
    calls = re.findall(r'<div class="call" id="(call-\d+-\d+)">', dom)
    assert len(calls) == 14, calls  # every call of both cells
    assert "It is 18°C in Paris" in dom and "&lt;img src=x onerror=" in dom
    nano = dom[dom.index("<h3>triage[nano]"):]
    assert '<a class="calls-link" href="#calls-' in nano
    # each check links to its session's first call; the target exists
    link = re.search(r'<a class="calls-link" href="#(call-\d+-\d+)">model calls</a>', nano).group(1)
    assert f'id="{link}"' in dom
    first = nano[nano.index('<div class="call"'):]
    assert "weather-paris/0001" in first[:400] and "get_weather" in first[:3000]
    shot = tmp_path / "calls.png"
    browse(tmp_path, "--window-size=1280,4000", "--hide-scrollbars", f"--screenshot={shot}", page.resolve().as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_page_bounds_the_calls_it_shows_and_says_how_many_are_left_out() -> None:
    from evalrun.history.records import StoredEval
    from evalrun.reports_out.html import call_views

    call = {"n": 1, "session": "s", "index": 1, "status": 200, "model": "m", "tokens": {"input": 1, "output": 1},
            "answer": "x" * 5000}
    e = StoredEval(name="e", status="passed", models={"call_log": [dict(call, n=k) for k in range(1, 11)]})
    view = call_views([e], budget=20_000)["e"]
    assert len(view.calls) == 3 and view.left_out == 7


LIVE_CALLER = """
import json, os, urllib.request
from evalrun import scorer

base = os.environ["OPENAI_BASE_URL"]
body = {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "be brief"},
                                             {"role": "user", "content": "what is 2+2?"}]}
req = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(),
                             headers={"Content-Type": "application/json", "Authorization": "Bearer x"})
answer = json.load(urllib.request.urlopen(req, timeout=10))["choices"][0]["message"]["content"]
with scorer.check("the model answered") as c:
    c.true(bool(answer), answer)
"""


@pytest.mark.parametrize("record", [True, False], ids=["recorded", "live"])
def test_recorded_and_live_runs_keep_their_calls_too(project, record) -> None:
    with FakeUpstream() as upstream:
        proj = project({
            "manifest.toml": f'[models]\nupstream = "{upstream.url}"\n\n' + eval_entry("live", tier="t3", extra="model = true"),
            "evals/live/score.py": LIVE_CALLER,
        })
        r = proj.run("t3", *(["--record"] if record else []), env={"OPENAI_API_KEY": SECRET})
    assert r.code == 0, r.output
    [call] = proj.eval_result("live", "t3")["models"]["call_log"]
    assert call["messages"] == [{"role": "system", "text": "be brief"}, {"role": "user", "text": "what is 2+2?"}]
    assert call["answer"] and call["status"] == 200 and call["model"]
    assert SECRET not in json.dumps(call)
    if record:
        assert call["fixture"] == "evals/live/fixtures/live/0001.json"
        assert (proj.root / call["fixture"]).is_file()
    else:
        assert "fixture" not in call
    shown = proj.run("show", "live").out
    assert "1 model call (live)" in shown or "1 model call (record)" in shown
    assert f"    → answer: {call['answer'][:40]}" in shown
