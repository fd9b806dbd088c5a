"""Hostile scorers through the real CLI: their text never forges a workflow command or an escape sequence.

One test per way a scorer could do it before (issue 19): a TAP skip-all reason
with lone CRs, the ``running`` check of a timed-out scorer, stored check names
shown by ``evalrun history``, ESC and C0/C1 controls in plain output and in
``::error`` annotations, and ``\\x1b[2J`` on a terminal. The output is split
the way GitHub's runner splits it (LF, CR, CRLF) and at every other line
boundary a reader might honour; evalrun's own annotations must still be there.
"""

from __future__ import annotations

import json
import os
import re
import sys

import pytest

from harness import Project, eval_entry

GITHUB = {"CI": "true", "GITHUB_ACTIONS": "true"}
_LINE_BREAK = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_OWN = re.compile(r"::(error|warning) (?:file=[^:,]*,)?title=evalrun [^:,]*::[^\r\n]*")
FORGED = "\r::add-mask::abc\r::error file=forged.py,line=1::forged"


def command_lines(text: str) -> list[str]:
    """What GitHub would run as workflow commands: lines starting ``::`` (or ``##[``) after whitespace."""
    return [line for line in _LINE_BREAK.split(text) if line.lstrip().startswith(("::", "##["))]


def assert_no_forgery(text: str) -> list[str]:
    """No control character; every command line is one of evalrun's annotations. The annotations."""
    found = _CONTROL.search(text)
    assert found is None, f"control {found.group()!r} in {text[max(0, found.start() - 80):found.end() + 80]!r}"
    commands = command_lines(text)
    for line in commands:
        assert _OWN.fullmatch(line), f"forged command line: {line!r}"
        assert "forged.py" not in line.split("::")[1], line  # properties are evalrun's: no forged file=
    return commands


def _tap_skip_all(project) -> Project:  # noqa: ANN001
    return project({
        "manifest.toml": eval_entry("skipall", extra='format = "tap"'),
        "evals/skipall/score.py": f"import sys\nsys.stdout.write({'1..0 # SKIP reason' + FORGED + chr(10)!r})\n",
    })


def test_a_tap_skip_reason_with_lone_crs_is_shown_on_one_line_and_forges_nothing(project) -> None:
    proj = _tap_skip_all(project)
    r = proj.run("t1", env=GITHUB)

    assert r.code == 4, r.output
    commands = assert_no_forgery(r.out)
    assert [c.split(" ", 1)[0] for c in commands] == ["::warning"]  # evalrun's own "not checked" annotation
    visible = r"reason\r::add-mask::abc\r::error file=forged.py,line=1::forged"
    skip_line = next(line for line in r.out.splitlines() if line.startswith("SKIP"))
    assert visible in skip_line
    assert f"skipped     skipall: everything skipped in TAP: {visible}" in r.out  # the "not checked" line
    # The results file keeps the exact text; only what is shown is neutralised.
    assert FORGED in proj.eval_result("skipall")["message"]


def test_the_check_running_when_a_scorer_timed_out_is_named_on_one_line(project) -> None:
    running = "first\n::error file=forged.py,line=1::forged running"
    proj = project({
        "manifest.toml": eval_entry("slow", extra="timeout = 1"),
        "evals/slow/score.py": (
            "import json, os, time\n"
            f"json.dump({{'running': {running!r}, 'checks': []}}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
            "time.sleep(60)\n"
        ),
    })
    r = proj.run("t1", env=GITHUB)

    assert r.code == 1, r.output
    commands = assert_no_forgery(r.out)
    assert len(commands) == 1 and commands[0].startswith("::error file=evals/slow,title=evalrun slow::timed out")
    timeout_line = next(line for line in r.out.splitlines() if line.startswith("TIMEOUT"))
    assert r'during check "first\n::error file=forged.py,line=1::forged running"' in timeout_line, timeout_line


def test_evalrun_history_shows_stored_check_names_inert(project) -> None:
    name = "clear\x1b[2J\n::error file=forged.py,line=1::forged\r##[group]g"
    proj = project({
        "manifest.toml": eval_entry("names"),
        "evals/names/score.py": (
            "import json, os\n"
            f"json.dump({{'checks': [{{'name': {name!r}, 'assertions': 1, 'passed': False}}]}},"
            " open(os.environ['EVALRUN_REPORT'], 'w'))\n"
        ),
    })
    assert proj.run("t1").code == 1

    for args in (["history"], ["history", "--eval", "names"], ["history", "--eval", "names", "--check", name]):
        r = proj.run(*args, env=GITHUB)
        assert r.code == 0, r.output
        assert_no_forgery(r.output)
        assert command_lines(r.output) == []
        if "--eval" in args:
            assert r"names: clear\x1b[2J\n::error file=forged.py,line=1::forged\r##[group]g" in r.out, r.out
    as_json = proj.run("history", "--eval", "names", "--json", env=GITHUB)
    assert_no_forgery(as_json.out)
    assert json.loads(as_json.out)["checks"][0]["check"] == name  # JSON carries the exact name, escaped

    # An error naming what the user asked for (here a forged name) is one inert line on stderr.
    missing = proj.run("history", "--eval", "nope" + FORGED, env=GITHUB)
    assert missing.code == 2
    assert_no_forgery(missing.err)
    assert missing.err.count("\n") == 1 and r"nope\r::add-mask::abc" in missing.err


HOSTILE_CHECK = {
    "name": "clear\x1b[2Jscreen",
    "assertions": 1,
    "passed": False,
    "message": "bad\x1b]0;title\x07 \x9b31m \x07bell \x00nul \u2028::error::ls \x85::error::nel",
    "evidence": "ev\x1b[2J\r::error::in evidence\n\x1bc",
}


def _escapes(project) -> Project:  # noqa: ANN001
    return project({
        "manifest.toml": eval_entry("esc"),
        "evals/esc/score.py": (
            "import json, os, sys\n"
            f"json.dump({{'checks': [{HOSTILE_CHECK!r}], 'metrics': {{'k\\x1b[2J': 'v\\r::error::m'}}}},"
            " open(os.environ['EVALRUN_REPORT'], 'w'))\n"
            "sys.stdout.write('tail\\x1b[2J\\r::error::tail\\n')\n"
        ),
    })


def test_escapes_and_controls_reach_no_plain_output_annotation_or_report(project) -> None:
    proj = _escapes(project)
    summary = proj.root / "summary.md"
    r = proj.run("t1", "--junit", "out.xml", "--markdown", "out.md", "--html", "out.html",
                 env={**GITHUB, "GITHUB_STEP_SUMMARY": str(summary)})

    assert r.code == 1, r.output
    commands = assert_no_forgery(r.output)
    error = next(c for c in commands if c.startswith("::error file=evals/esc,"))
    assert r"clear\x1b[2Jscreen" in error and r"\x9b31m" in error and r"\u2028::error::ls" in error
    assert r'FAIL        esc  check "clear\x1b[2Jscreen" failed: bad\x1b]0;title\x07' in r.out
    for report in ("out.xml", "out.md", "out.html", "summary.md"):
        text = (proj.root / report).read_text(encoding="utf-8")
        assert "\x1b" not in text, report
        assert_no_forgery(text)
        assert command_lines(text) == [], report
    assert r"clear\x1b[2Jscreen" in (proj.root / "out.html").read_text(encoding="utf-8")


def test_on_a_terminal_a_scorer_cannot_clear_the_screen(project) -> None:
    import pty

    proj = _escapes(project)
    # fresh, not forked: a pty is its stdout and stderr
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal is its stdout and stderr
        os.chdir(proj.root)
        os.execvpe(sys.executable, [sys.executable, "-m", "evalrun", "t1"], proj.env({"TERM": "xterm-256color"}))
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    screen = b"".join(chunks).decode("utf-8", "replace")

    assert os.waitstatus_to_exitcode(status) == 1, screen
    assert "\x1b[3" in screen  # colour: it is a terminal
    assert "\x1b[2J" not in screen and "\x1b]" not in screen and "\x1bc" not in screen and "\x9b" not in screen
    assert r"clear\x1b[2Jscreen" in screen
    # What remains after evalrun's own codes (colour, the progress bar's cursor moves) is plain text.
    own = re.sub(r"\x1b\[[0-9;]*m|\x1b\[\?25[lh]|\x1b\[[0-9]*[AK]|\r", "", screen)
    assert _CONTROL.search(own) is None, own


def test_replay_serve_shows_a_hostile_fixtures_model_name_inert(tmp_path) -> None:
    import shutil
    import signal
    import subprocess

    import httpx

    from harness import REPO, default_sigint

    fixture = json.loads((REPO / "evals/agent/fixtures/@nano/weather-paris/0001.json").read_text())
    fixture["session"] = "demo"
    fixture["response"]["body"]["model"] = "gpt\x1b[2J" + FORGED
    (tmp_path / "demo").mkdir()
    (tmp_path / "demo" / "0001.json").write_text(json.dumps(fixture), encoding="utf-8")
    # fresh, not forked: a server whose banner is read while it runs, stopped by Ctrl-C
    child = subprocess.Popen(
        [sys.executable, "-m", "evalrun", "replay", "serve", "--fixtures", str(tmp_path), "--mode", "replay",
         "--eval", "demo"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
        env={**os.environ, **GITHUB},
    )
    try:
        assert child.stdout is not None
        banner = child.stdout.readline()
        url = re.search(r"on (http://127\.0\.0\.1:\d+/t/[0-9a-f]{32}) ", banner)
        assert url, banner
        answer = httpx.post(f"{url.group(1)}/v1/chat/completions", json=fixture["request"]["body"], trust_env=False)
        assert answer.status_code == 200, answer.text
    finally:
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    shutil.rmtree(tmp_path / "demo")
    shown = banner + out + err
    assert_no_forgery(shown)
    assert command_lines(shown) == []
    assert r"models gpt\x1b[2J\r::add-mask::abc\r::error file=forged.py,line=1::forged" in out, out


# Arguments typer (click) refuses, echoed in its usage error: each with a forged command after LF, CR,
# U+2028 or a bidi override, and escapes. Which of them typer escapes itself depends on its version (>= 0.12).
HOSTILE_USAGE = [
    ["t1", "--no-such-option", "\n::error::x"],
    ["t1", "--no-such-option" + FORGED],
    ["t1", "--x\x1b[2J\u2029::warning::y"],
    ["t1", "extra\u2028::error file=forged.py::ls\x1b]0;title\x07"],
    ["t1", "extra" + FORGED, "\u202e::error::rlo"],
    ["t1", "--jobs", "\x1b[31m\u2028::error::j"],
    ["nosuch\u2028::error::c\x85::error::nel"],
    ["replay", "serve", "--mode", "\u2028::error::m\x9b2J"],
    ["baseline", "diff", "t1", "--x\r\n::error::crlf"],
]


@pytest.mark.parametrize("args", HOSTILE_USAGE, ids=range(len(HOSTILE_USAGE)))
def test_a_usage_error_shows_hostile_arguments_inert(project, args: list[str]) -> None:
    proj = project({"manifest.toml": eval_entry("a")})
    r = proj.run(*args, env=GITHUB)

    assert r.code == 2, r.output
    assert r.out == ""
    assert_no_forgery(r.err)
    assert command_lines(r.err) == []
    assert "\x1b" not in r.err
    lines = r.err.split("\n")
    assert lines[-1] == "" and lines[-2].startswith("Error: ") and lines[0].startswith("Usage: evalrun")
    assert len([line for line in lines if line.startswith("Error: ")]) == 1  # its one line, still one line


def test_a_usage_error_is_worded_as_typer_words_it(project) -> None:
    proj = project({"manifest.toml": eval_entry("a")})
    r = proj.run("t1", "--nope")
    assert (r.code, r.out) == (2, "")
    assert r.err == ("Usage: evalrun t1 [OPTIONS]\nTry 'evalrun t1 --help' for help.\n\n"
                     "Error: No such option: --nope (Possible options: --no-skips)\n")


def test_a_usage_error_shows_no_key_the_user_mistyped_into_an_argument(project) -> None:
    key = "sk-test-usage-0f1e2d3c4b5a69788796"
    proj = project({"manifest.toml": eval_entry("a")})
    r = proj.run("t1", "--" + key, env={"OPENAI_API_KEY": key})
    assert r.code == 2, r.output
    assert key not in r.output and "Error: No such option: --" in r.err


def test_a_usage_error_that_echoes_raw_line_breaks_stays_one_inert_line(monkeypatch, capsys) -> None:
    """An older typer (click) echoes arguments raw: its usage error, as main gets it, is still one line, inert."""
    import typer

    import evalrun.commands.run
    from evalrun.cli import main

    def refuse(*args: object, **kwargs: object) -> int:
        raise typer.BadParameter("'x" + FORGED + "\n::error::lf\r\n::error::crlf\x1bc\u2028::error::ls' is no tier")

    monkeypatch.setattr(evalrun.commands.run, "run_tier", refuse)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code = main(["t1"])
    captured = capsys.readouterr()

    assert code == 2 and captured.out == ""
    assert_no_forgery(captured.err)
    assert command_lines(captured.err) == [] and "\x1b" not in captured.err
    assert captured.err == ("Usage: evalrun t1 [OPTIONS]\nTry 'evalrun t1 --help' for help.\n\n"
                            r"Error: Invalid value: 'x\r::add-mask::abc\r::error file=forged.py,line=1::forged"
                            r"\n::error::lf\r\n::error::crlf\x1bc\u2028::error::ls' is no tier" "\n")
