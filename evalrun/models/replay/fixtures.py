"""Replay fixtures on disk: where one model call's recording lives, and what it holds.

A fixture is keyed by (session, call index), not by a hash of the request:
editing a prompt does not invalidate it, while a change in the number or the
order of model calls shows as a missing or an unplayed fixture. The file is
``<fixtures>/<session>/<index>.json`` with a four-digit index counted from
0001, pretty-printed so that a review reads it::

    {
      "evalrun_fixture": 1,
      "session": "weather", "index": 1, "provider": "openai",
      "request":  {"method": "POST", "path": "/v1/chat/completions",
                   "headers": {...}, "body": {...}},        # for diagnosis only
      "response": {"status": 200, "headers": {"content-type": "application/json"},
                   "body": {...}}                            # or "stream": ["data: ...\\n\\n", ...]
    }

A body that is not JSON is kept as ``body_text`` (UTF-8) or ``body_base64``.

This module also owns redaction: a fixture never holds an ``Authorization``,
``x-api-key`` or similar credential header, nor the value of any key
variable, wherever it appears (headers, body, query string, response).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.atomic import write_atomic
from evalrun.errors import file_label
from evalrun.secrets import scrub

FIXTURE_VERSION = 1

# Credential headers are dropped outright, whatever their value.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
# Only these request headers are kept: enough to diagnose, nothing that varies per machine.
_KEPT_REQUEST_HEADERS = frozenset({"content-type", "anthropic-version", "anthropic-beta", "openai-beta", "accept"})
_KEPT_RESPONSE_HEADERS = frozenset({"content-type"})

_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_FIXTURE_NAME = re.compile(r"(\d{4,})\.json")


class FixtureError(Exception):
    """A fixture file cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class RecordedResponse:
    """What a fixture replays: a status, headers, and a body or a list of stream chunks."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    stream: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Fixture:
    """One recorded model call."""

    session: str
    index: int
    provider: str
    method: str
    path: str
    response: RecordedResponse


def check_session(session: str) -> str | None:
    """Why ``session`` cannot name a fixture folder, or None when it can."""
    if _SESSION.fullmatch(session) and ".." not in session:
        return None
    return (
        f"session {session!r} is not a valid fixture folder name; "
        "use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"
    )


def default_session(eval_name: str) -> str:
    """The session of calls without an X-Evalrun-Session header: the eval's name, made a safe folder name."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", eval_name).replace("..", "-").strip("-._")[:100]
    return name or "default"


def fixture_path(fixtures_dir: Path, session: str, index: int) -> Path:
    """Where the fixture of the ``index``-th call (from 1) of ``session`` lives."""
    return fixtures_dir / session / f"{index:04d}.json"


def list_fixtures(fixtures_dir: Path) -> dict[tuple[str, int], Path]:
    """Every fixture under ``fixtures_dir``, keyed by (session, index)."""
    found: dict[tuple[str, int], Path] = {}
    if not fixtures_dir.is_dir():
        return found
    for session_dir in fixtures_dir.iterdir():
        if not session_dir.is_dir():
            continue
        for file in session_dir.iterdir():
            match = _FIXTURE_NAME.fullmatch(file.name)
            if match:
                found[(session_dir.name, int(match.group(1)))] = file
    return found




def read_fixture(path: Path) -> Fixture:
    """Load one fixture; raise FixtureError naming the file, the place and the fix."""
    where = file_label(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FixtureError(f"{where}: line {exc.lineno}: invalid JSON ({exc.msg}); re-record it") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FixtureError(f"{where}: cannot read ({exc.__class__.__name__}); re-record it") from None
    try:
        request = data["request"]
        response = data["response"]
        stream = response.get("stream")
        recorded = RecordedResponse(
            status=int(response["status"]),
            headers={str(k).lower(): str(v) for k, v in response.get("headers", {}).items()},
            body=b"" if stream is not None else _decode_body(response),
            stream=tuple(str(chunk) for chunk in stream) if stream is not None else None,
        )
        return Fixture(
            session=str(data.get("session", path.parent.name)),
            index=int(data.get("index", 0)),
            provider=str(data.get("provider", "")),
            method=str(request["method"]).upper(),
            path=str(request["path"]),
            response=recorded,
        )
    except KeyError as exc:
        raise FixtureError(f"{where}: not an evalrun fixture (no {exc} key); re-record it") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise FixtureError(f"{where}: not an evalrun fixture (wrong shape: {exc}); re-record it") from None


def write_fixture(
    path: Path,
    *,
    session: str,
    index: int,
    provider: str,
    method: str,
    request_path: str,
    request_headers: dict[str, str],
    request_body: bytes,
    response: RecordedResponse,
    secrets: set[str],
) -> None:
    """Write one fixture atomically, with credentials and secret values taken out."""
    response_data: dict[str, Any] = {
        "status": response.status,
        "headers": {k: v for k, v in response.headers.items() if k.lower() in _KEPT_RESPONSE_HEADERS},
    }
    if response.stream is not None:
        response_data["stream"] = list(response.stream)
    else:
        response_data.update(_encode_body(response.body))
    request_data: dict[str, Any] = {
        "method": method,
        "path": request_path,
        "headers": {k.lower(): v for k, v in request_headers.items() if k.lower() in _KEPT_REQUEST_HEADERS},
    }
    request_data.update(_encode_body(request_body))
    data = {
        "evalrun_fixture": FIXTURE_VERSION,
        "session": session,
        "index": index,
        "provider": provider,
        "request": request_data,
        "response": response_data,
    }
    text = json.dumps(redact(data, secrets), indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, text)


def redact(value: Any, secrets: set[str]) -> Any:
    """``value`` with credential headers dropped and every secret replaced, at any depth."""
    return _redact(value, secrets)


def _redact(value: Any, secrets: set[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {
            _redact(k, secrets): _redact(v, secrets)
            for k, v in value.items()
            if not (isinstance(k, str) and k.lower() in CREDENTIAL_HEADERS)
        }
    if isinstance(value, list):
        return [_redact(v, secrets) for v in value]
    return value


def _encode_body(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(body).decode("ascii")}
    try:
        return {"body": json.loads(text)}
    except json.JSONDecodeError:
        return {"body_text": text}


def _decode_body(response: dict[str, Any]) -> bytes:
    if "body" in response:
        return json.dumps(response["body"], ensure_ascii=False).encode("utf-8")
    if "body_text" in response:
        return str(response["body_text"]).encode("utf-8")
    if "body_base64" in response:
        return base64.b64decode(response["body_base64"])
    return b""
