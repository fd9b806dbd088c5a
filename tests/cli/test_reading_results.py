"""Reading a failing run (issue 22): short FAIL lines, the crash's place, -v, names with experiments, progress.

The realistic runs use the repository's own agent eval (``evals/agent``) under
its two experiments, replayed in t2 from copies of the committed fixtures, some
of them removed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import Project, an_eval, manifest
from harness.agent_project import ENV, agent_project

def _fail_line(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("FAIL") and f" {name} " in line)


def test_missing_fixtures_are_one_grouped_clause_with_the_fix_said_once(tmp_path):
    proj = agent_project(tmp_path, remove=(
        "@mini/weather-paris/0001.json", "@mini/weather-paris/0002.json", "@mini/trip-tokyo/0001.json",
        "@mini/convert-usd-eur/0001.json",
    ))
    run = proj.run("t2", env=ENV)
    assert run.code == 1, run.output
    line = _fail_line(run.out, "triage[mini]")
    assert "3 calls had no fixture:" in line, line
    named = line.split("3 calls had no fixture: ", 1)[1].split(" (in ", 1)[0]
    assert sorted(named.split(", ")) == ["convert-usd-eur/0001", "trip-tokyo/0001", "weather-paris/0001"], line
    assert "(in evals/agent/fixtures/@mini)" in line
    assert line.count("evalrun t3 --record") == 1, line  # the fix, once
    assert line.count("or make the code call the model") == 1, line
    assert len(line) < 500, len(line)
    # The check keeps its full message in the results file.
    result = proj.eval_result("triage[mini]", "t2")
    assert any("record it with `evalrun t3 --record`" in (c["message"] or "") for c in result["checks"])


def test_a_missing_fixture_mid_session_is_named_not_blamed_on_the_next_recording(tmp_path):
    proj = agent_project(tmp_path, remove=("@mini/trip-tokyo/0001.json",))
    run = proj.run("t2", "-x", "mini", env=ENV)
    assert run.code == 1, run.output
    message = proj.eval_result("triage[mini]", "t2")["message"]
    assert "evals/agent/fixtures/@mini/trip-tokyo/0001.json" in message, message
    assert "does not match its recording" not in message, message
    assert "1 call had no fixture" in message, message


def test_consecutive_missing_fixtures_read_as_a_range_per_session(tmp_path):
    from evalrun.models.failures import describe_missing

    folder = tmp_path / "fixtures"
    paths = [folder / "triage" / f"000{i}.json" for i in (1, 2, 3, 4)] + [folder / "judge" / "0001.json"]
    paths.append(folder / "triage" / "0006.json")
    text = describe_missing(paths)
    assert text.startswith("6 calls had no fixture: triage/0001–0004, triage/0006, judge/0001 (in "), text
    assert text.count("evalrun t3 --record") == 1


CRASHING_PYTHON = {
    "manifest.toml": manifest(an_eval("triage"), tiers={"t1": {}}).text,
    "evals/triage/score.py": """
        import rules

        rules.urgency({"level": 3})
    """,
    "evals/triage/rules.py": """
        import json


        def urgency(ticket):
            json.dumps(ticket)
            return ticket["max_urgency"]
    """,
}


def test_a_python_crash_names_the_innermost_frame_in_the_eval_folder(project):
    run = project(CRASHING_PYTHON).run("t1")
    assert run.code == 1, run.output
    line = next(ln for ln in run.out.splitlines() if ln.startswith("ERROR"))
    assert "KeyError: 'max_urgency' (at evals/triage/rules.py:6)" in line, line


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH (.ci/run installs it)")
def test_a_node_crash_names_the_innermost_frame_in_the_eval_folder(project):
    run = project({
        "manifest.toml": manifest(an_eval("triage", ["node", "score.js"]), tiers={"t1": {}}).text,
        "evals/triage/score.js": """
            const rules = require("./lib/rules.js");
            rules.urgency({ level: 3 });
        """,
        "evals/triage/lib/rules.js": """
            exports.urgency = (ticket) => {
              return ticket.max.urgency;
            };
        """,
    }).run("t1")
    assert run.code == 1, run.output
    line = next(ln for ln in run.out.splitlines() if ln.startswith("ERROR"))
    assert "TypeError" in line and "(at evals/triage/lib/rules.js:2)" in line, line


def test_verbose_prints_the_output_tail_of_each_failing_eval_only(project):
    fine = ("import json, os; print('fine output'); "
            "json.dump({'checks': [{'name': 'a', 'assertions': 1, 'passed': True}]}, open(os.environ['EVALRUN_REPORT'], 'w'))")
    files = dict(CRASHING_PYTHON)
    files["manifest.toml"] = manifest(an_eval("triage"), an_eval("fine", ["python", "-c", fine]), tiers={"t1": {}}).text
    files["evals/triage/score.py"] = "import rules\nprint('::error::not a workflow command \\x1b[2J')\nrules.urgency({})\n"
    files["evals/fine/.keep"] = ""
    proj = project(files)
    quiet = proj.run("t1")
    assert "Traceback" not in quiet.out
    loud = proj.run("t1", "-v")
    assert loud.code == 1, loud.output
    lines = loud.out.splitlines()
    header = lines.index("--- triage: output tail (ERROR)")
    shown = lines[header + 1 : header + 12]
    assert "  | Traceback (most recent call last):" in shown, shown
    assert any(ln.startswith("  |") and "KeyError: 'max_urgency'" in ln for ln in shown), shown
    assert "  | \\x3a:error::not a workflow command \\x1b[2J" in shown  # indented, defused, the escape shown, not sent
    assert not any(ln.startswith("::error::") for ln in lines)
    assert "fine output" not in loud.out  # a passing eval's output stays out
    assert proj.run("t1", "--verbose").out.count("--- triage: output tail") == 1


# -- progress: the evals running now and their model calls, eval[experiment] everywhere ------------------------

SLOW_SCORER = """
    import json, os, time, urllib.request
    from pathlib import Path

    base = os.environ["OPENAI_BASE_URL"].rstrip("/")
    for n in range(2):
        body = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"hi {n}"}]}).encode()
        request = urllib.request.Request(base + "/chat/completions", body, {"content-type": "application/json"})
        urllib.request.urlopen(request, timeout=30).read()
    while not Path("go").exists():  # the test lets it finish once it saw the calls on the progress line
        time.sleep(0.05)
    json.dump({"checks": [{"name": "answered", "assertions": 1, "passed": True}]}, open(os.environ["EVALRUN_REPORT"], "w"))
"""


def _fixture(index: int) -> str:
    return json.dumps({
        "evalrun_fixture": 2, "session": "slow", "index": index, "provider": "openai",
        "request": {"method": "POST", "path": "/v1/chat/completions", "headers": {"content-type": "application/json"},
                    "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"hi {index - 1}"}]}},
        "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": {
            "id": f"c{index}", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}}},
    })


def slow_project(root: Path) -> Project:
    files = {
        "manifest.toml": manifest(
            an_eval("slow", tier="t2", model=True, timeout=60, tags=["m"]),
            tiers={"t2": {}}, models={"replay_match": "index"}, experiments={"mini": {"tags": ["m"]}},
        ).text,
        "evals/slow/score.py": SLOW_SCORER,
    }
    files.update({f"evals/slow/fixtures/@mini/slow/000{i}.json": _fixture(i) for i in (1, 2)})
    return Project(root).write(files)


def _read_until(fd: int, seen: bytearray, wanted: bytes, within: float = 60.0) -> None:
    import select
    import time

    deadline = time.monotonic() + within
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"{wanted!r} never appeared in {bytes(seen)[-2000:]!r}"
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the pty's other side closed
                chunk = b""
            if not chunk:
                assert wanted in seen, f"{wanted!r} never appeared in {bytes(seen)[-2000:]!r}"
                return
            seen += chunk


def test_on_a_terminal_the_progress_line_shows_the_running_eval_and_its_calls_and_the_table_keeps_the_experiment(
    tmp_path,
):
    import pty

    proj = slow_project(tmp_path)
    leader, follower = pty.openpty()
    env = proj.env({"TERM": "xterm", "COLUMNS": "160", "PYTHONDONTWRITEBYTECODE": "1"})
    # fresh, not forked: a pty is its terminal, read while it runs
    proc = subprocess.Popen([sys.executable, "-m", "evalrun", "t2"], cwd=tmp_path, env=env,
                            stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    seen = bytearray()
    try:
        _read_until(leader, seen, b"slow[mini] 2 calls")  # live, while it runs
        (tmp_path / "evals/slow/go").write_text("")
        _read_until(leader, seen, b"evalrun t2: ")
        _read_until(leader, seen, b"results: ")
        assert proc.wait(timeout=60) == 0, bytes(seen)[-3000:]
    finally:
        (tmp_path / "evals/slow/go").write_text("")  # a failed wait must not leave the scorer waiting
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)
        os.close(leader)
    text = seen.decode("utf-8", "replace")
    table = [ln for ln in text.splitlines() if "PASS" in ln and "│" in ln]
    assert table and all("slow[mini]" in ln for ln in table), text[-3000:]
    assert "PASS" in text and "slow[mini]  1 check" in text


def test_in_ci_progress_is_an_occasional_plain_line_naming_the_running_eval_and_its_calls(tmp_path):
    proj = slow_project(tmp_path)
    env = proj.env({"CI": "true", "EVALRUN_PROGRESS_INTERVAL": "0.2", "PYTHONDONTWRITEBYTECODE": "1"})
    # fresh, not forked: its output read while it runs
    proc = subprocess.Popen([sys.executable, "-m", "evalrun", "t2"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = bytearray()
    try:
        _read_until(proc.stdout.fileno(), seen, b"running")
        _read_until(proc.stdout.fileno(), seen, b"slow[mini] 2 calls\n")
        (tmp_path / "evals/slow/go").write_text("")
        _read_until(proc.stdout.fileno(), seen, b"results: ")
        assert proc.wait(timeout=60) == 0, bytes(seen)
    finally:
        (tmp_path / "evals/slow/go").write_text("")  # a failed wait must not leave the scorer waiting
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)
        proc.stdout.close()
    text = seen.decode()
    assert "\x1b" not in text and "\r" not in text  # plain text, no live redraws
    line = next(ln for ln in text.splitlines() if "slow[mini] 2 calls" in ln)
    assert line.startswith("t2: 0/1 done, running (") and line.endswith("): slow[mini] 2 calls"), line
