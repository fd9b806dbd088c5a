"""``evalrun replay serve`` run for real: a foreground process, stopped by Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from evalrun.commands.replay import ServeRequest, serve
from harness.session import make_session
from evalrun.errors import UsageError

from harness import default_sigint
from harness.fakes_upstream import FakeUpstream

REAL_KEY = "sk-proj-SERVE-MUST-NEVER-PRINT-THIS-0123"


def start_serve(fixtures: Path, mode: str, upstream: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "OPENAI_API_KEY": REAL_KEY}
    argv = [sys.executable, "-m", "evalrun", "replay", "serve", "--fixtures", str(fixtures), "--mode", mode,
            "--eval", "demo"] + (["--upstream", upstream] if upstream else [])
    # fresh, not forked: a server whose banner is read while it runs, stopped by a signal
    child = subprocess.Popen(  # the real CLI: evalrun replay serve ...
        argv,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,  # Ctrl-C must stop it even when the suite runs in the background
    )
    try:
        assert child.stdout is not None
        # Read the banner to its last line: communicate() later reads the pipe, not this buffer.
        banner = [child.stdout.readline()]
        while "(sessions:" not in banner[-1] and banner[-1]:
            banner.append(child.stdout.readline())
        match = re.search(r"on (http://127\.0\.0\.1:\d+/t/[0-9a-f]{32}) \(Ctrl-C to stop\)", banner[0])
        assert match, "".join(banner)
    except BaseException:
        _kill(child)  # no server left behind by a failed start
        raise
    BANNERS[child.pid] = "".join(banner)
    return child, match.group(1)


def _kill(child: subprocess.Popen[str]) -> None:
    child.kill()
    child.communicate()


BANNERS: dict[int, str] = {}


def stop(child: subprocess.Popen[str], sig: int = signal.SIGINT) -> tuple[int, str, str]:
    child.send_signal(sig)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        _kill(child)  # it ignored the signal: fail, but leave nothing running
        raise
    return child.returncode, BANNERS.pop(child.pid) + out, err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_serve_records_prints_its_url_and_a_summary_and_never_the_key(tmp_path, sig):
    fixtures = tmp_path / "fixtures"
    with FakeUpstream() as upstream:
        child, url = start_serve(fixtures, "record", upstream.url)
        try:
            # A key in the query string (as Google's API takes it) must not reach the log either.
            answer = httpx.post(f"{url}/v1/chat/completions?key={REAL_KEY}", json={"model": "m", "messages": []},
                                trust_env=False)
        finally:
            code, out, err = stop(child, sig)
        assert upstream.requests[0].headers["Authorization"] == f"Bearer {REAL_KEY}"
    assert answer.status_code == 200
    assert code == 0, err
    assert f"export OPENAI_BASE_URL={url}/v1" in out and f"export ANTHROPIC_BASE_URL={url}" in out
    assert "demo/demo#0001 POST /v1/chat/completions -> 200 (record)" in out
    assert "1 call, 18 tokens (11 in, 7 out), provider openai, models gpt-4o-mini-2024-07-18" in out
    assert REAL_KEY not in out + err + (fixtures / "demo" / "0001.json").read_text()


def test_serve_in_replay_reports_the_missing_fixture_and_exits_1(tmp_path):
    child, url = start_serve(tmp_path, "replay", "")
    try:
        answer = httpx.post(f"{url}/e/demo/v1/messages", json={}, headers={"X-Evalrun-Session": "s"}, trust_env=False)
    finally:
        code, out, _ = stop(child)
    assert answer.status_code == 404
    assert code == 1
    assert f"missing fixture {tmp_path / 's' / '0001.json'}" in out


def busy_port() -> tuple[socket.socket, int]:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder, holder.getsockname()[1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "playback"}, "--mode 'playback': unknown mode; use one of replay, record, live"),
        ({"fixtures": "absent"}, "--fixtures {tmp}/absent: no such folder; record fixtures first with --mode record"),
        ({"mode": "record", "upstream": "api.openai.com"}, "--upstream 'api.openai.com': not an http(s) URL"),
        ({"port": 70000}, "--port 70000: must be between 0 (any free port) and 65535"),
        ({"eval_name": "a/b"}, "--eval 'a/b': must be a non-empty name without '/'"),
        ({"port": "busy"}, "--port {busy}: cannot listen on 127.0.0.1:{busy}"),
    ],
    ids=["mode", "fixtures", "upstream", "port-range", "eval-name", "port-busy"],
)
def test_serve_refuses_bad_arguments_with_one_line(tmp_path, kwargs, message):
    holder, port = busy_port()
    try:
        args = {"fixtures": tmp_path, "mode": "replay", "upstream": None, "port": 0, "eval_name": "demo", **kwargs}
        if args["fixtures"] == "absent":
            args["fixtures"] = tmp_path / "absent"
        if args["port"] == "busy":
            args["port"] = port
        with pytest.raises(UsageError) as caught:
            serve(ServeRequest(**args), make_session())  # type: ignore[arg-type]
    finally:
        holder.close()
    assert message.format(tmp=tmp_path, busy=port) in str(caught.value)
    assert "\n" not in str(caught.value)
