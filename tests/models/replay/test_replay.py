"""The record/replay proxy against a real fake upstream on 127.0.0.1, through real HTTP."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from typing import Any

import httpx
import pytest

from evalrun.secrets import PLACEHOLDER, known_secrets
from evalrun.models.replay.proxy import ReplayProxy

from harness.fakes_upstream import ANTHROPIC_MODEL, OPENAI_MODEL, FakeUpstream

OPENAI_KEY = "sk-proj-REALKEY-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-api03-REALKEY-fedcba9876543210"
KEY_ENV = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello"}]}
CLAUDE = {"model": "claude-3-5-haiku-latest", "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}
PLACEHOLDER_AUTH = {"Authorization": f"Bearer {PLACEHOLDER}"}


@pytest.fixture
def upstream():
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture
def client():
    with httpx.Client(timeout=10, trust_env=False) as c:
        yield c


def proxy_for(mode: str, upstream: FakeUpstream | None = None, **kwargs: Any) -> ReplayProxy:
    # The run's secrets, as evalrun.run.context works them out: the key values of KEY_ENV and any others given.
    kwargs["redact_values"] = set(known_secrets(KEY_ENV).keys) | set(kwargs.get("redact_values") or ())
    proxy = ReplayProxy(mode, upstream=upstream.url if upstream else None, key_env=KEY_ENV, **kwargs)  # type: ignore[arg-type]
    proxy.start()
    return proxy


def call(client: httpx.Client, base: str, path: str, body: dict[str, Any], headers: dict[str, str] | None = None):
    return client.post(f"{base}{path}", json=body, headers=headers or PLACEHOLDER_AUTH)


# An OpenAI chat stream that asks for its usage chunk gets it (one that does not ask: test_replay_budget.py).
ASK_USAGE = {"/v1/chat/completions": {"stream_options": {"include_usage": True}}}


def streamed(client: httpx.Client, base: str, path: str, body: dict[str, Any]) -> bytes:
    with client.stream("POST", f"{base}{path}", json={**body, "stream": True, **ASK_USAGE.get(path, {})},
                       headers=PLACEHOLDER_AUTH) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return r.read()


def test_record_then_replay_round_trip_serves_the_recorded_answer_without_the_upstream(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    proxy = proxy_for("record", upstream)
    try:
        base = proxy.register_eval("chat", fixtures)
        recorded = call(client, base, "/v1/chat/completions", CHAT)
        report = proxy.eval_report("chat")
    finally:
        proxy.stop()
    assert recorded.status_code == 200
    # The proxy replaced the placeholder with the real key, upstream only.
    assert upstream.requests[0].headers["Authorization"] == f"Bearer {OPENAI_KEY}"
    assert "X-Evalrun-Session" not in upstream.requests[0].headers
    fixture = json.loads((fixtures / "chat" / "0001.json").read_text())
    assert fixture["response"]["body"]["model"] == OPENAI_MODEL
    assert fixture["request"]["body"] == CHAT
    assert (report.calls, report.input_tokens, report.output_tokens, report.total_tokens) == (1, 11, 7, 18)

    replay = proxy_for("replay")
    try:
        base = replay.register_eval("chat", fixtures)
        replayed = call(client, base, "/v1/chat/completions", CHAT)
        report = replay.eval_report("chat")
    finally:
        replay.stop()
    assert replayed.status_code == 200
    # Byte for byte what the client got when recording (the echoed key aside), with the headers SDKs read.
    assert replayed.content == recorded.content.replace(OPENAI_KEY.encode(), b"[redacted by evalrun]")
    assert replayed.headers["x-request-id"] == recorded.headers["x-request-id"]
    assert len(upstream.requests) == 1
    record = report.as_record()
    [logged] = record.pop("call_log")  # the call itself, for the report's view of it (issue 22)
    assert record == {
        "mode": "replay", "provider": "openai", "models": [OPENAI_MODEL], "calls": 1,
        "by_provider": {"openai": [OPENAI_MODEL]}, "tokens": {"input": 11, "output": 7, "total": 18},
    }
    assert logged["answer"] == "echo: hello (auth seen: Bearer [redacted by evalrun])" and OPENAI_KEY not in str(logged)
    assert report.missing == () and report.unplayed == ()


@pytest.mark.parametrize(
    ("path", "body", "model", "tokens", "events"),
    [
        ("/v1/chat/completions", CHAT, OPENAI_MODEL, (13, 5, 18), 5),
        ("/v1/messages", CLAUDE, ANTHROPIC_MODEL, (25, 9, 34), 6),
    ],
    ids=["openai", "anthropic"],
)
def test_a_stream_is_recorded_as_chunks_and_replayed_as_a_stream(upstream, client, tmp_path, path, body, model, tokens, events):
    fixtures = tmp_path / "fixtures"
    proxy = proxy_for("record", upstream)
    try:
        live_bytes = streamed(client, proxy.register_eval("s", fixtures), path, body)
    finally:
        proxy.stop()
    fixture = json.loads((fixtures / "s" / "0001.json").read_text())
    assert len(fixture["response"]["stream"]) == events
    # The fake upstream echoes the key it got, split across two events: the fixture holds none of it.
    assert OPENAI_KEY not in json.dumps(fixture) and OPENAI_KEY[:12] not in json.dumps(fixture)
    recorded_bytes = "".join(fixture["response"]["stream"]).encode()
    live_events = [e for e in live_bytes.decode().split("\n\n") if e]
    kept = [e for e in recorded_bytes.decode().split("\n\n") if e]
    assert len(kept) == len(live_events)
    assert [a for a, b in zip(kept, live_events) if a != b] == [
        a for a in kept if "[redacted by evalrun]" in a  # only the events that carried a piece of the key changed
    ]

    replay = proxy_for("replay")
    try:
        replayed = streamed(client, replay.register_eval("s", fixtures), path, body)
        report = replay.eval_report("s")
    finally:
        replay.stop()
    assert replayed == recorded_bytes
    assert (report.input_tokens, report.output_tokens, report.total_tokens) == tokens
    assert report.models == (model,)


def test_an_edited_prompt_fails_loudly_unless_the_suite_matches_by_index(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    proxy = proxy_for("record", upstream)
    try:
        call(client, proxy.register_eval("chat", fixtures), "/v1/chat/completions", CHAT)
    finally:
        proxy.stop()
    edited = {**CHAT, "messages": [{"role": "user", "content": "edited"}]}
    replay = proxy_for("replay")
    try:
        answer = call(client, replay.register_eval("chat", fixtures), "/v1/chat/completions", edited)
        report = replay.eval_report("chat")
    finally:
        replay.stop()
    assert answer.status_code == 400 and answer.headers["x-should-retry"] == "false"
    assert report.missing == (
        f"evalrun replay: call 1 of session 'chat' (POST /v1/chat/completions) does not match its recording "
        f"{fixtures / 'chat' / '0001.json'}: messages[0].content: recorded \"hello\", now \"edited\"; "
        "the request changed since it was recorded: re-record with `evalrun t3 --record`",
    )
    assert report.unplayed == ()
    by_index = proxy_for("replay", match="index")
    try:
        answer = call(client, by_index.register_eval("chat", fixtures), "/v1/chat/completions", edited)
        report = by_index.eval_report("chat")
    finally:
        by_index.stop()
    assert answer.status_code == 200 and report.missing == ()


def test_live_streams_are_relayed_chunk_by_chunk(client, tmp_path):
    with FakeUpstream(hold_stream=True) as upstream:
        proxy = proxy_for("live", upstream)
        try:
            base = proxy.register_eval("s", None)
            body = {**CHAT, "stream": True}
            with client.stream("POST", f"{base}/v1/chat/completions", json=body, headers=PLACEHOLDER_AUTH) as r:
                chunks = r.iter_raw()
                first = next(chunks)
                # The upstream is still holding the rest: the first event got through on its own.
                assert not upstream.release.is_set()
                assert b'"role": "assistant"' in first
                upstream.release.set()
                rest = b"".join(chunks)
            assert rest.endswith(b"data: [DONE]\n\n")
        finally:
            proxy.stop()


def test_a_missing_fixture_answers_an_error_naming_the_expected_path_and_is_kept_for_the_verdict(client, tmp_path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    proxy = proxy_for("replay")
    try:
        base = proxy.register_eval("chat", fixtures)
        answer = call(client, base, "/v1/chat/completions", CHAT, {"X-Evalrun-Session": "greet"})
        report = proxy.eval_report("chat")
    finally:
        proxy.stop()
    expected = str(fixtures / "greet" / "0001.json")
    assert answer.status_code == 404
    assert answer.json()["error"]["type"] == "evalrun_missing_fixture"
    assert expected in answer.json()["error"]["message"]
    # Even if the code under test swallowed the 404, the report fails the eval.
    assert len(report.failures()) == 1 and expected in report.failures()[0]
    assert "evalrun t3 --record" in report.failures()[0]


def test_unplayed_fixtures_are_reported_and_fail_only_under_strict_replay(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    proxy = proxy_for("record", upstream)
    try:
        base = proxy.register_eval("chat", fixtures)
        for _ in range(3):
            call(client, base, "/v1/chat/completions", CHAT, {**PLACEHOLDER_AUTH, "X-Evalrun-Session": "s"})
    finally:
        proxy.stop()
    replay = proxy_for("replay")
    try:
        base = replay.register_eval("chat", fixtures)
        for _ in range(2):
            assert call(client, base, "/v1/chat/completions", CHAT, {"X-Evalrun-Session": "s"}).status_code == 200
        report = replay.eval_report("chat")
    finally:
        replay.stop()
    assert report.unplayed == (f"{fixtures / 's' / '0003.json'} was recorded but not requested",)
    assert report.failures() == []
    assert report.failures(strict_replay=True) == list(report.unplayed)


def test_a_call_in_another_order_is_named_not_served(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    proxy = proxy_for("record", upstream)
    try:
        call(client, proxy.register_eval("e", fixtures), "/v1/embeddings", {"model": "m", "input": "x"})
    finally:
        proxy.stop()
    replay = proxy_for("replay")
    try:
        answer = call(client, replay.register_eval("e", fixtures), "/v1/chat/completions", CHAT)
        report = replay.eval_report("e")
    finally:
        replay.stop()
    assert answer.status_code == 400 and answer.headers["x-should-retry"] == "false"
    assert answer.json()["error"]["type"] == "evalrun_fixture_mismatch"
    assert "call 1 of session 'e' (POST /v1/chat/completions) does not match its recording" in report.missing[0]
    assert "recorded POST /v1/embeddings, now POST /v1/chat/completions" in report.missing[0]
    assert report.unplayed == ()


def test_recorded_fixtures_hold_no_credential_header_and_no_key_value(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    other_secret = "db-password-never-written"
    proxy = proxy_for("record", upstream, redact_values={other_secret})
    try:
        base = proxy.register_eval("k", fixtures)
        # The client holds real keys itself (t3) and even puts one in its prompt and query string.
        leaky = {**CHAT, "messages": [{"role": "user", "content": f"my key is {OPENAI_KEY}, pw {other_secret}"}]}
        call(client, base, f"/v1/chat/completions?key={OPENAI_KEY}", leaky, {"Authorization": f"Bearer {OPENAI_KEY}"})
        call(client, base, "/v1/messages", CLAUDE, {"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"})
        streamed(client, base, "/v1/chat/completions", CHAT)  # placeholder in, real key injected upstream
    finally:
        proxy.stop()
    files = sorted(fixtures.rglob("*.json"))
    assert len(files) == 3
    for file in files:
        text = file.read_text()
        for secret in (OPENAI_KEY, ANTHROPIC_KEY, other_secret, "upstream-cookie"):
            assert secret not in text, f"{file.name} leaks {secret[:6]}..."
        lowered = text.lower()
        assert '"authorization"' not in lowered and '"x-api-key"' not in lowered and "set-cookie" not in lowered
    # The upstream echoed the key it received: the fixture keeps the sentence, not the key.
    assert "auth seen: Bearer [redacted by evalrun]" in files[0].read_text()
    assert json.loads(files[1].read_text())["request"]["headers"] == {
        "content-type": "application/json", "anthropic-version": "2023-06-01", "accept": "*/*"
    }


def test_several_evals_and_sessions_in_parallel_keep_their_own_call_order(upstream, client, tmp_path):
    evals = {"alpha": tmp_path / "alpha" / "fixtures", "beta": tmp_path / "beta" / "fixtures"}
    sessions = ["s1", "s2", "s3"]

    def run_all(proxy: ReplayProxy, results: dict[tuple[str, str, int], str]) -> None:
        bases = {name: proxy.register_eval(name, folder) for name, folder in evals.items()}

        def one(name: str, session: str) -> None:
            with httpx.Client(timeout=10, trust_env=False) as own:
                for n in range(1, 4):
                    body = {**CHAT, "messages": [{"role": "user", "content": f"{name}/{session}/{n}"}]}
                    headers = {**PLACEHOLDER_AUTH, "X-Evalrun-Session": session}
                    answer = call(own, bases[name], "/v1/chat/completions", body, headers)
                    content = answer.json()["choices"][0]["message"]["content"]
                    results[(name, session, n)] = content.split(" (auth seen")[0]

        threads = [threading.Thread(target=one, args=(e, s)) for e in evals for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    recorded: dict[tuple[str, str, int], str] = {}
    proxy = proxy_for("record", upstream)
    try:
        run_all(proxy, recorded)
    finally:
        proxy.stop()
    for name, folder in evals.items():
        for session in sessions:
            for n in range(1, 4):
                fixture = json.loads((folder / session / f"000{n}.json").read_text())
                assert fixture["request"]["body"]["messages"][0]["content"] == f"{name}/{session}/{n}"

    replayed: dict[tuple[str, str, int], str] = {}
    replay = proxy_for("replay")
    try:
        run_all(replay, replayed)
        reports = [replay.eval_report(name) for name in evals]
    finally:
        replay.stop()
    assert replayed == recorded and len(replayed) == 18
    assert all(r.calls == 9 and not r.missing and not r.unplayed for r in reports)


def test_live_mode_relays_and_counts_but_writes_nothing(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    proxy = proxy_for("live", upstream)
    try:
        base = proxy.register_eval("l", fixtures)
        call(client, base, "/v1/embeddings", {"model": "text-embedding-3-small", "input": "x"})
        call(client, base, "/v1/responses", {"model": "gpt-4.1", "input": "hi"})
        report = proxy.eval_report("l")
    finally:
        proxy.stop()
    assert list(fixtures.iterdir()) == []
    assert report.calls == 2 and report.total_tokens == 16
    assert report.models == ("gpt-4.1-2025-04-14", "text-embedding-3-small")


def test_recording_again_lists_older_fixtures_the_new_recording_did_not_request(upstream, client, tmp_path):
    fixtures = tmp_path / "fixtures"
    stale = fixtures / "r" / "0002.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}")
    proxy = proxy_for("record", upstream)
    try:
        call(client, proxy.register_eval("r", fixtures), "/v1/chat/completions", CHAT)
        report = proxy.eval_report("r")
    finally:
        proxy.stop()
    assert report.unplayed == (f"{stale} was recorded before but not requested in this recording; delete it",)
    assert stale.exists()  # never deleted behind the user's back


@pytest.mark.parametrize(
    ("path", "headers", "status", "kind"),
    [
        ("/e/nobody/v1/chat/completions", {}, 404, "evalrun_unknown_eval"),
        ("/v1/chat/completions", {}, 404, "evalrun_unknown_eval"),
        ("/e/chat/v1/chat/completions", {"X-Evalrun-Session": "../escape"}, 400, "evalrun_invalid_session"),
    ],
    ids=["unknown-eval", "no-prefix", "bad-session"],
)
def test_requests_the_proxy_cannot_place_are_refused_with_a_named_error(client, tmp_path, path, headers, status, kind):
    proxy = proxy_for("replay")
    try:
        proxy.register_eval("chat", tmp_path)
        answer = client.post(f"{proxy.endpoint}{path}", json=CHAT, headers=headers)
    finally:
        proxy.stop()
    assert answer.status_code == status
    assert answer.headers["x-evalrun-error"] == kind and answer.headers["x-should-retry"] == "false"
    assert not any(tmp_path.rglob("*.json"))


def test_an_unreachable_upstream_answers_424_not_retried_and_is_reported(client, tmp_path):
    proxy = ReplayProxy("record", upstream="http://127.0.0.1:9", key_env=KEY_ENV, redact_values=set(known_secrets(KEY_ENV).keys))
    proxy.start()
    try:
        answer = call(client, proxy.register_eval("u", tmp_path), "/v1/chat/completions", CHAT)
        report = proxy.eval_report("u")
    finally:
        proxy.stop()
    assert answer.status_code == 424 and answer.headers["x-should-retry"] == "false"
    assert "http://127.0.0.1:9: connection refused" in answer.json()["error"]["message"]
    # It names the setting to change, not only the address (a user's gateway replaced by the default went unexplained).
    assert answer.json()["error"]["message"].endswith(
        "; check the openai upstream ([models] upstream.openai, EVALRUN_UPSTREAM_OPENAI; the run's first lines say where it was set)"
    )
    assert report.calls == 0 and len(report.missing) == 1
    assert OPENAI_KEY not in answer.text


def test_an_eval_name_that_is_no_folder_name_still_gets_a_safe_default_session(upstream, client, tmp_path):
    proxy = proxy_for("record", upstream)
    try:
        call(client, proxy.register_eval("rls isolation (v2)", tmp_path), "/v1/chat/completions", CHAT)
    finally:
        proxy.stop()
    assert (tmp_path / "rls-isolation-v2" / "0001.json").is_file()


def test_a_request_without_the_run_token_is_refused_and_never_reaches_the_upstream(upstream, client, tmp_path):
    proxy = proxy_for("live", upstream)
    try:
        base = proxy.register_eval("t", None)
        port_only = proxy.url  # what another local process could guess: the port, not the token
        for url in (f"{port_only}/e/t/v1/chat/completions", f"{port_only}/v1/chat/completions",
                    f"{port_only}/t/{'0' * 32}/e/t/v1/chat/completions"):
            answer = client.post(url, json=CHAT)
            assert answer.status_code == 401 and answer.headers["x-should-retry"] == "false"
            assert answer.json()["error"]["type"] == "evalrun_unauthorized"
        assert upstream.requests == []
        assert call(client, base, "/v1/chat/completions", CHAT).status_code == 200
        assert base.startswith(f"{port_only}/t/{proxy.token}/e/") and len(proxy.token) == 32
    finally:
        proxy.stop()
    assert len(upstream.requests) == 1


def _threads_settle(baseline: int) -> None:
    deadline = time.monotonic() + 10
    while threading.active_count() > baseline and time.monotonic() < deadline:
        time.sleep(0.02)


def test_client_connection_resets_print_no_traceback(upstream, capfd, tmp_path):
    proxy = proxy_for("live", upstream)
    try:
        base = proxy.register_eval("r", None)
        baseline = threading.active_count()
        port = int(proxy.url.rsplit(":", 1)[1])
        for partial in (b"", b"POST /t/", f"POST {base[len(proxy.url):]}/v1/chat/completions HTTP/1.1\r\n"
                        "Content-Length: 1000\r\n\r\n{\"model\"".encode()):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(partial or b"G")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # linger 0: a reset, not a clean close
        _threads_settle(baseline)
    finally:
        proxy.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ConnectionResetError" not in err, err


def test_an_oversized_or_malformed_request_body_is_refused_not_read(upstream, client, tmp_path):
    proxy = proxy_for("live", upstream)
    try:
        base = proxy.register_eval("big", None)
        answer = client.post(f"{base}/v1/chat/completions", content=b"{}", headers={"Content-Length": "2", "X-Pad": "x"})
        assert answer.status_code == 200
        port = int(proxy.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(f"POST {base[len(proxy.url):]}/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         "Content-Length: 99999999999\r\n\r\n".encode())
            head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 413") and b"x-should-retry: false" in head.lower()
    finally:
        proxy.stop()
