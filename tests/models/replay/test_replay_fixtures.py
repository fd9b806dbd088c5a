"""Fixture files and usage reading: unusable fixtures named, usage read from every API shape."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrun.secrets import REDACTED
from evalrun.models.replay.fixtures import (
    FIXTURE_VERSION,
    FixtureError,
    RecordedResponse,
    check_session,
    default_session,
    fixture_path,
    list_fixtures,
    read_fixture,
    redact,
    redact_stream,
    write_fixture,
)
from evalrun.models.replay.matching import describe_difference, normalise_body, request_digest
from evalrun.models.replay.upstream import decoded_request_body
from evalrun.models.replay.usage import read_usage

GOOD = {
    "evalrun_fixture": FIXTURE_VERSION, "session": "s", "index": 1, "provider": "openai",
    "request": {"method": "POST", "path": "/v1/chat/completions"},
    "response": {"status": 200, "headers": {"content-type": "application/json"}, "body": {"ok": True}},
}


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"request": ', "line 1: invalid JSON"),
        (json.dumps({**GOOD, "response": None}), "not an evalrun fixture"),
        (json.dumps({k: v for k, v in GOOD.items() if k != "request"}), "not an evalrun fixture (no 'request' key)"),
        (json.dumps([1, 2]), "not an evalrun fixture"),
        (json.dumps({**GOOD, "response": {"status": "ok"}}), "not an evalrun fixture"),
        (json.dumps({**GOOD, "response": {"status": 200, "body_base64": "!!not base64!!"}}), "body_base64 is not base64"),
        (json.dumps({**GOOD, "response": {"status": 99999}}), "is not an HTTP status"),
        (json.dumps({**GOOD, "response": {"status": 200, "stream": [1, 2]}}), "must be a list of strings"),
        (json.dumps({**GOOD, "response": {"status": 200, "body": 1, "body_layout": "nope"}}), "body_layout 'nope' is unknown"),
        (json.dumps({**GOOD, "response": {"status": 200, "headers": {"x": "a\r\nb"}}}), "line break"),
        (b"\xff\xfe not utf-8", "cannot read"),
        ("[" * 100000, "cannot read (RecursionError)"),
    ],
    ids=["bad-json", "null-response", "no-request", "not-an-object", "bad-status", "bad-base64", "status-range",
         "stream-shape", "layout", "header-injection", "not-utf8", "deep-nesting"],
)
def test_an_unusable_fixture_is_named_with_the_fix(tmp_path, content, problem):
    path = tmp_path / "s" / "0001.json"
    path.parent.mkdir()
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(FixtureError, match=rf"^{re.escape(str(path))}: .*{re.escape(problem)}.*"):
        read_fixture(path)


@pytest.mark.parametrize("kind", ["directory", "fifo", "symlink-to-dev-zero"])
def test_a_fixture_path_that_is_no_regular_file_is_an_error_never_a_hang(tmp_path, kind):
    path = tmp_path / "s" / "0001.json"
    path.parent.mkdir()
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    with pytest.raises(FixtureError, match=rf"^{re.escape(str(path))}: (not a regular file|cannot read)"):
        read_fixture(path)


def test_a_fixture_of_the_old_format_is_one_line_naming_the_file_and_the_fix(tmp_path):
    path = tmp_path / "s" / "0001.json"
    path.parent.mkdir()
    path.write_text(json.dumps({**GOOD, "evalrun_fixture": 1}))
    with pytest.raises(FixtureError) as caught:
        read_fixture(path)
    assert str(caught.value) == (
        f"{path}: fixture format 1, this evalrun reads format {FIXTURE_VERSION}; re-record it with `evalrun t3 --record`"
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.binary(max_size=300),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=20).map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"response": st.dictionaries(
        st.sampled_from(["status", "headers", "body", "body_text", "body_base64", "body_layout", "stream"]),
        st.none() | st.integers(-5, 1000) | st.text(max_size=10) | st.lists(st.text(max_size=5), max_size=3)
        | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    )}).map(lambda r: json.dumps({**GOOD, **r}).encode()),
))
def test_any_fixture_file_reads_as_a_fixture_or_a_one_line_error(tmp_path, content):
    path = tmp_path / "0001.json"
    path.write_bytes(content)
    try:
        read_fixture(path)
    except FixtureError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(str(path))


def test_a_fixture_reads_back_its_response_body_as_json(tmp_path):
    path = tmp_path / "0001.json"
    path.write_text(json.dumps(GOOD))
    fixture = read_fixture(path)
    assert (fixture.method, fixture.path, fixture.response.status) == ("POST", "/v1/chat/completions", 200)
    assert json.loads(fixture.response.body) == {"ok": True}


def test_fixtures_are_listed_by_session_and_index_and_other_files_ignored(tmp_path):
    for name in ("a/0001.json", "a/0002.json", "b/0010.json", "a/notes.txt", "a/1.json"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}")
    assert sorted(list_fixtures(tmp_path)) == [("a", 1), ("a", 2), ("b", 10)]
    assert fixture_path(tmp_path, "a", 3) == tmp_path / "a" / "0003.json"
    assert list_fixtures(tmp_path / "absent") == {}


@pytest.mark.parametrize("session", ["../up", "a/b", "", ".hidden", "x" * 101, "sp ace"])
def test_a_session_that_is_no_safe_folder_name_is_refused(session):
    assert check_session(session) is not None


def test_default_sessions_are_safe_folder_names():
    assert default_session("rls-isolation") == "rls-isolation"
    assert default_session("my eval (v2)") == "my-eval-v2"
    assert default_session("..") == "default"
    assert check_session(default_session("a..b/c")) is None


def test_redaction_drops_credential_headers_and_replaces_secrets_at_any_depth():
    data = {"headers": {"Authorization": "Bearer k", "X-Api-Key": "k", "accept": "*/*"},
            "body": {"messages": [{"content": "use sk-LONGSECRET and sk-LONG"}], "sk-LONGSECRET": 1}}
    out = redact(data, {"sk-LONG", "sk-LONGSECRET"})
    assert out["headers"] == {"accept": "*/*"}
    assert out["body"]["messages"][0]["content"] == f"use {REDACTED} and {REDACTED}"
    assert out["body"][REDACTED] == 1


def sse(*payloads: object) -> list[str]:
    return [f"data: {json.dumps(p)}\n\n" for p in payloads] + ["data: [DONE]\n\n"]


@pytest.mark.parametrize(
    ("body", "stream", "expected"),
    [
        ({"model": "gpt-4o", "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}, [],
         (10, 5, 15, {"gpt-4o"})),
        ({"model": "text-embedding-3-small", "usage": {"prompt_tokens": 8, "total_tokens": 8}}, [],
         (8, 0, 8, {"text-embedding-3-small"})),
        ({"model": "gpt-4.1", "usage": {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}}, [],
         (9, 3, 12, {"gpt-4.1"})),
        ({"model": "claude-x", "usage": {"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 6}}, [],
         (120, 6, 126, {"claude-x"})),
        (None, sse({"model": "gpt-4o", "usage": None}, {"model": "gpt-4o", "choices": [],
                                                       "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6}}),
         (4, 2, 6, {"gpt-4o"})),
        (None, sse({"type": "message_start", "message": {"model": "claude-x", "usage": {"input_tokens": 25, "output_tokens": 1}}},
                   {"type": "message_delta", "usage": {"output_tokens": 9}}),
         (25, 9, 34, {"claude-x"})),
        (None, sse({"type": "response.completed", "response": {"model": "gpt-4.1",
                                                              "usage": {"input_tokens": 7, "output_tokens": 2, "total_tokens": 9}}}),
         (7, 2, 9, {"gpt-4.1"})),
        ({"error": {"message": "rate limited"}}, [], (0, 0, 0, set())),
    ],
    ids=["chat", "embeddings", "responses", "anthropic-cache", "chat-stream", "anthropic-stream", "responses-stream", "error"],
)
def test_usage_and_models_are_read_from_every_api_shape(body, stream, expected):
    usage = read_usage(json.dumps(body).encode() if body else None, stream)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.models) == expected


def test_a_body_that_is_not_json_counts_nothing():
    assert read_usage(b"\x89PNG binary").total_tokens == 0


def test_committed_fixture_layout_is_documented(tmp_path: Path):
    # The path shape is part of the contract users review in pull requests.
    assert fixture_path(Path("fixtures"), "weather", 3).as_posix() == "fixtures/weather/0003.json"


KEY = "sk-test-fixturekey-0123456789abcdef"


def record(tmp_path: Path, response: RecordedResponse, request_body: bytes = b"{}", headers: dict | None = None) -> Path:
    path = tmp_path / "s" / "0001.json"
    write_fixture(path, session="s", index=1, provider="openai", method="POST", request_path="/v1/chat/completions",
                  request_headers=headers or {"content-type": "application/json"}, request_body=request_body,
                  response=response, secrets={KEY})
    return path


@pytest.mark.parametrize("body", [
    b'{"id":"x","choices":[{"text":"caf\xc3\xa9"}]}',
    b'{\n  "id": "x",\n  "n": 1.0\n}\n',
    b'{"a": "\\u00e9", "b": [1, 2]}',
    b'{"a":1,  "b":2}',
    b"plain text answer",
    b"\x89PNG\r\n\x1a\n binary",
], ids=["compact-utf8", "indent-newline", "ascii-escaped", "odd-spacing", "text", "binary"])
def test_a_response_body_replays_byte_for_byte(tmp_path, body):
    path = record(tmp_path, RecordedResponse(200, {"content-type": "application/json"}, body=body))
    assert read_fixture(path).response.body == body


def test_the_response_headers_sdks_act_on_are_kept_and_credentials_dropped(tmp_path):
    headers = {"content-type": "application/json", "x-should-retry": "false", "retry-after-ms": "5",
               "retry-after": "1", "x-request-id": "req_1", "request-id": "req_2", "x-ratelimit-remaining-requests": "9",
               "anthropic-ratelimit-tokens-remaining": "99", "set-cookie": "s=1", "date": "today", "server": "x"}
    kept = read_fixture(record(tmp_path, RecordedResponse(500, headers, body=b"{}"))).response.headers
    assert kept == {k: v for k, v in headers.items() if k not in ("set-cookie", "date", "server")}


def test_a_binary_or_gzip_request_body_never_keeps_a_key_in_any_encoding(tmp_path):
    secret_payload = b"\xff\xfe" + f"key={KEY}".encode() + b"\x00" + f"{KEY}".encode("utf-16-le")
    path = record(tmp_path, RecordedResponse(200, {}, body=b"{}"), request_body=secret_payload)
    stored = path.read_text()
    data = json.loads(stored)["request"]
    assert "body_base64" not in data and set(data) >= {"body_sha256", "body_bytes"}
    # A gzip body is stored decoded, key replaced.
    zipped = gzip.compress(json.dumps({"messages": [{"content": f"my key {KEY}"}]}).encode())
    body = decoded_request_body(zipped, {"Content-Encoding": "gzip"})
    path = record(tmp_path, RecordedResponse(200, {}, body=b"{}"), request_body=body)
    stored = path.read_text()
    assert json.loads(stored)["request"]["body"]["messages"][0]["content"] == f"my key {REDACTED}"
    for text in (stored,):
        for form in (KEY, KEY[4:20], base64.b64encode(KEY.encode()).decode()[:16]):
            assert form not in text


def test_a_key_in_a_binary_response_is_replaced_bytewise(tmp_path):
    body = b"\x89PNG" + KEY.encode() + b"\xff" + KEY.encode("utf-16-be")
    replayed = read_fixture(record(tmp_path, RecordedResponse(200, {}, body=body))).response.body
    assert KEY.encode() not in replayed and KEY.encode("utf-16-be") not in replayed
    assert REDACTED.encode() in replayed


def test_a_key_split_across_two_stream_events_is_redacted(tmp_path):
    half = len(KEY) // 2
    events = [
        f'data: {json.dumps({"choices": [{"delta": {"content": "the key is " + KEY[:half]}}]})}\n\n',
        f'data: {json.dumps({"choices": [{"delta": {"content": KEY[half:] + " ok"}}]})}\n\n',
        "data: [DONE]\n\n",
    ]
    out = redact_stream(events, {KEY})
    joined = "".join(json.loads(e[6:])["choices"][0]["delta"]["content"] for e in out[:2])
    assert KEY[:half] not in "".join(out) and KEY[half:] not in "".join(out)
    assert joined == f"the key is {REDACTED}{REDACTED} ok"
    assert out[2] == "data: [DONE]\n\n"
    stored = read_fixture(record(tmp_path, RecordedResponse(200, {}, stream=tuple(events)))).response.stream
    assert KEY[:half] not in "".join(stored) and KEY[half:] not in "".join(stored)


def test_the_request_digest_ignores_volatile_fields_and_headers_but_not_the_prompt_or_stream_options():
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
            "stream_options": {"include_usage": True}}
    digest = request_digest("POST", "/v1/chat/completions", chat, None)
    assert request_digest("post", "/v1/chat/completions?x=1", {**chat, "user": "u-123", "metadata": {"a": 1}}, None) == digest
    assert request_digest("POST", "/v1/chat/completions", {**chat, "stream_options": None}, None) != digest
    assert request_digest("POST", "/v1/chat/completions", {**chat, "model": "n"}, None) != digest
    claude = {"model": "c", "max_tokens": 5, "messages": [], "metadata": {"user_id": "random-1"}}
    assert request_digest("POST", "/v1/messages", claude, None) == request_digest(
        "POST", "/v1/messages", {**claude, "metadata": {"user_id": "random-2"}}, None)
    # A multipart body's random boundary does not count.
    a = normalise_body(b"--AAA\r\nx\r\n--AAA--", "multipart/form-data; boundary=AAA", set())
    b = normalise_body(b"--BBB\r\nx\r\n--BBB--", "multipart/form-data; boundary=BBB", set())
    assert a == b


def test_a_difference_names_the_message_and_the_field():
    recorded = {"model": "m", "messages": [{"role": "system", "content": "s"},
                                           {"role": "user", "content": "How much is 250 USD in EUR?"}]}
    now = {"model": "m", "messages": [{"role": "system", "content": "s"},
                                      {"role": "user", "content": "How much is 300 USD in EUR?"}]}
    text = describe_difference(("POST", "/v1/chat/completions", recorded, None), ("POST", "/v1/chat/completions", now, None))
    assert text == 'messages[1].content: recorded "How much is 250 USD in EUR?", now "How much is 300 USD in EUR?"'


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.sampled_from(["application/json", "multipart/form-data; boundary=x", "text/plain", ""]),
       st.sampled_from(["/v1/chat/completions", "/v1/messages", "/v1/responses?x=1"]))
def test_any_request_body_has_a_digest_and_any_two_a_one_line_difference(body, content_type, path):
    value, sha = normalise_body(body, content_type, {KEY})
    digest = request_digest("POST", path, value, sha)
    assert len(digest) == 64
    other, other_sha = normalise_body(body + b" ", content_type, {KEY})
    text = describe_difference(("POST", path, value, sha), ("POST", path, other, other_sha))
    assert "\n" not in text.strip("\n") or isinstance(value, str)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=6), st.integers(0, 40))
def test_a_key_cut_anywhere_across_stream_events_never_survives(words, cut):
    text = " ".join(words) + KEY + " ".join(words)
    cut = min(cut, len(text))
    pieces = [text[:cut], text[cut:]]
    events = [f'data: {json.dumps({"delta": {"text": p}})}\n\n' for p in pieces]
    out = "".join(redact_stream(events, {KEY}))
    leaves = "".join(json.loads(e[6:])["delta"]["text"] for e in redact_stream(events, {KEY}))
    assert KEY not in leaves and KEY not in out
