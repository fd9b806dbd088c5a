"""Fixture files and usage reading: unusable fixtures named, usage read from every API shape."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalrun.secrets import REDACTED
from evalrun.models.replay.fixtures import (
    FixtureError,
    check_session,
    default_session,
    fixture_path,
    list_fixtures,
    read_fixture,
    redact,
)
from evalrun.models.replay.usage import read_usage

GOOD = {
    "evalrun_fixture": 1, "session": "s", "index": 1, "provider": "openai",
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
    ],
    ids=["bad-json", "null-response", "no-request", "not-an-object", "bad-status"],
)
def test_an_unusable_fixture_is_named_with_the_fix(tmp_path, content, problem):
    path = tmp_path / "s" / "0001.json"
    path.parent.mkdir()
    path.write_text(content)
    with pytest.raises(FixtureError, match=rf"^{re.escape(str(path))}: .*{re.escape(problem)}.*re-record it"):
        read_fixture(path)


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
