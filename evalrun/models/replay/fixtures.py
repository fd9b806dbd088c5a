"""Replay fixtures on disk: where one model call's recording lives, and what it holds.

A fixture is named by (session, call index): ``<fixtures>/<session>/<index>.json``
with a four-digit index counted from 0001. Which recording answers a replayed
call is decided by ``evalrun.models.replay.matching`` (by request, then by
index). The file is pretty-printed so that a review reads it::

    {
      "evalrun_fixture": 2,
      "session": "weather", "index": 1, "provider": "openai",
      "request":  {"method": "POST", "path": "/v1/chat/completions",
                   "headers": {...},                        # for diagnosis only
                   "body": {...}},                          # or "body_text", or "body_sha256" (binary)
      "response": {"status": 200,
                   "headers": {"content-type": "application/json", "x-request-id": "req_1", ...},
                   "body": {...}, "body_layout": "indent2"} # or "body_text" / "body_base64" / "stream": [...]
    }

Response bodies replay byte for byte what the client saw *after* transfer
decoding: a gzip or deflate answer is stored decoded (and served without
``content-encoding``). A JSON body is stored as JSON for review with the
``body_layout`` that reproduces its exact bytes; a body no layout reproduces is
kept as ``body_text`` (UTF-8) or ``body_base64``. A stream is kept as its list
of server-sent events, exactly as sent. Response headers kept are those the
SDKs act on (``KEPT_RESPONSE_HEADERS``: retries, rate limits, request ids).

Redaction: a fixture never holds an ``Authorization``, ``x-api-key`` or similar
credential header, nor the value of any key variable, wherever it appears:
headers, body, query string, a stream (also a key split across events), or a
binary body (replaced byte-wise in UTF-8 and UTF-16). A request body that is
not UTF-8 text is not stored at all, only its SHA-256 (of the body with keys
replaced), so no encoding of it can carry a key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.atomic import write_atomic
from evalrun.errors import file_label
from evalrun.secrets import REDACTED, scrub

FIXTURE_VERSION = 2
MAX_FIXTURE_BYTES = 64 * 1024 * 1024  # a fixture larger than this is refused, not read into memory

# Credential headers are dropped outright, whatever their value.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie"}
)
# Only these request headers are kept: enough to diagnose, nothing that varies per call.
_KEPT_REQUEST_HEADERS = frozenset({"content-type", "anthropic-version", "anthropic-beta", "openai-beta", "accept"})
# Response headers the official SDKs read (retry decisions, backoff, request ids, polling) plus rate limits.
KEPT_RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "content-disposition",
        "x-should-retry",
        "retry-after",
        "retry-after-ms",
        "x-request-id",
        "request-id",
        "openai-poll-after-ms",
        "openai-processing-ms",
        "openai-version",
        "anthropic-workspace-id",
    }
)
_KEPT_RESPONSE_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "ratelimit-")

_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_FIXTURE_NAME = re.compile(r"(\d{4,9})\.json")
# JSON layouts tried when storing a body as JSON; the first that reproduces the bytes is kept.
_LAYOUTS: dict[str, dict[str, Any]] = {
    "compact": {"separators": (",", ":")},
    "spaced": {},
    "indent2": {"indent": 2},
}


class FixtureError(Exception):
    """A fixture file cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class RecordedResponse:
    """What a fixture replays: a status, headers, and a body or a list of stream events."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    stream: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RecordedRequest:
    """The request a fixture was recorded for, as stored: what replay compares with."""

    method: str
    path: str
    body: Any = None  # parsed JSON, text, or None
    body_sha256: str | None = None  # a binary body, stored only as its hash


@dataclass(frozen=True)
class Fixture:
    """One recorded model call."""

    file: Path
    session: str
    index: int
    provider: str
    request: RecordedRequest
    response: RecordedResponse

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def path(self) -> str:
        return self.request.path


def check_session(session: str) -> str | None:
    """Why ``session`` cannot name a fixture folder, or None when it can."""
    if _SESSION.fullmatch(session) and ".." not in session:
        return None
    return (
        f"session {session[:120]!r} is not a valid fixture folder name; "
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
        # Only folders a session can name: not ``@<experiment>`` ones (evalrun.run.model_calls.fixtures_dir).
        if session_dir.is_dir() and check_session(session_dir.name) is None:
            found.update({(session_dir.name, i): p for i, p in list_session(fixtures_dir, session_dir.name).items()})
    return found


def list_session(fixtures_dir: Path, session: str) -> dict[int, Path]:
    """The fixtures of one session, keyed by index."""
    folder = fixtures_dir / session
    found: dict[int, Path] = {}
    try:
        names = list(folder.iterdir())
    except OSError:
        return found
    for file in names:
        match = _FIXTURE_NAME.fullmatch(file.name)
        if match:
            found[int(match.group(1))] = file
    return found


def read_fixture(path: Path) -> Fixture:
    """Load one fixture; raise FixtureError naming the file, the place and the fix."""
    where = _Label(path)  # resolved only for a message: resolving costs more than reading
    try:
        raw = _read_regular(path, where)
        if len(raw) > MAX_FIXTURE_BYTES:
            raise FixtureError(f"{where}: larger than {MAX_FIXTURE_BYTES // 2**20} MiB; re-record it")
        data = json.loads(raw.decode("utf-8"))
    except json.JSONDecodeError as exc:
        raise FixtureError(f"{where}: line {exc.lineno}: invalid JSON ({exc.msg}); re-record it") from None
    except (OSError, UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise FixtureError(f"{where}: cannot read ({exc.__class__.__name__}); re-record it") from None
    try:
        return _parse(path, data)
    except FixtureError:
        raise
    except KeyError as exc:
        raise FixtureError(f"{where}: not an evalrun fixture (no {exc} key); re-record it") from None
    except Exception as exc:  # any shape a hand edit can make is that fixture's error, never the proxy's
        raise FixtureError(f"{where}: not an evalrun fixture (wrong shape: {exc.__class__.__name__}); re-record it") from None


class _Label:
    """A fixture's name for messages, worked out when first shown."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __str__(self) -> str:
        return file_label(self.path)


def _read_regular(path: Path, where: object) -> bytes:
    """At most ``MAX_FIXTURE_BYTES + 1`` bytes of a regular file; a FIFO or a device never blocks the proxy."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FixtureError(f"{where}: not a regular file; re-record it")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_FIXTURE_BYTES + 1)
    finally:
        os.close(fd)


def _parse(path: Path, data: Any) -> Fixture:
    where = _Label(path)
    if not isinstance(data, dict):
        raise FixtureError(f"{where}: not an evalrun fixture (not a JSON object); re-record it")
    version = data.get("evalrun_fixture")
    if version != FIXTURE_VERSION:
        raise FixtureError(
            f"{where}: fixture format {version!r}, this evalrun reads format {FIXTURE_VERSION}; "
            "re-record it with `evalrun t3 --record`"
        )
    request, response = data["request"], data["response"]
    status = int(response["status"])
    if not 100 <= status <= 599:
        raise FixtureError(f"{where}: response.status {status} is not an HTTP status; re-record it")
    headers = response.get("headers", {})
    stream = response.get("stream")
    if stream is not None and not (isinstance(stream, list) and all(isinstance(e, str) for e in stream)):
        raise FixtureError(f"{where}: response.stream must be a list of strings; re-record it")
    recorded = RecordedResponse(
        status=status,
        headers={str(k).lower(): _header_value(where, v) for k, v in headers.items()},
        body=b"" if stream is not None else _decode_body(where, response),
        stream=tuple(stream) if stream is not None else None,
    )
    sha = request.get("body_sha256")
    body = request["body"] if "body" in request else request.get("body_text")
    return Fixture(
        file=path,
        session=str(data.get("session", path.parent.name)),
        index=int(data.get("index", 0)),
        provider=str(data.get("provider", "")),
        request=RecordedRequest(str(request["method"]).upper(), str(request["path"]), body, str(sha) if sha else None),
        response=recorded,
    )


def _header_value(where: object, value: Any) -> str:
    text = str(value)
    if "\r" in text or "\n" in text:
        raise FixtureError(f"{where}: a response header holds a line break; re-record it")
    return text


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
    response_data: dict[str, Any] = {"status": response.status, "headers": kept_response_headers(response.headers)}
    if response.stream is not None:
        response_data["stream"] = redact_stream(response.stream, secrets)
    else:
        response_data.update(encode_response_body(response.body, secrets))
    request_data: dict[str, Any] = {
        "method": method,
        "path": request_path,
        "headers": {k.lower(): v for k, v in request_headers.items() if k.lower() in _KEPT_REQUEST_HEADERS},
    }
    request_data.update(encode_request_body(request_body, secrets))
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


def kept_response_headers(headers: dict[str, str]) -> dict[str, str]:
    """The response headers a fixture keeps: those that decide what a client does."""
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower() in KEPT_RESPONSE_HEADERS or k.lower().startswith(_KEPT_RESPONSE_PREFIXES)
    }


def redact(value: Any, secrets: set[str]) -> Any:
    """``value`` with credential headers dropped and every secret replaced, at any depth."""
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {
            redact(k, secrets): redact(v, secrets)
            for k, v in value.items()
            if not (isinstance(k, str) and k.lower() in CREDENTIAL_HEADERS)
        }
    if isinstance(value, list):
        return [redact(v, secrets) for v in value]
    return value


def scrub_bytes(data: bytes, secrets: set[str]) -> bytes:
    """``data`` with every secret replaced, in the encodings a binary body may hold text in."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
            needle = secret.encode(encoding)
            if needle in data:
                data = data.replace(needle, REDACTED.encode(encoding))
    return data


def redact_stream(events: tuple[str, ...] | list[str], secrets: set[str]) -> list[str]:
    """The events of a stream with every secret replaced, also one split across events.

    A streamed answer carries its text in pieces (``choices[0].delta.content``,
    ``delta.text``...). The pieces at the same JSON place are joined across events;
    where a secret shows in the join, each piece of it is replaced in its event.
    """
    out = [scrub(e, secrets) for e in events]
    if not secrets:
        return out
    pieces: dict[tuple[Any, ...], list[tuple[int, str, tuple[Any, ...]]]] = {}
    payloads: dict[int, list[tuple[str, Any]]] = {}
    for number, event in enumerate(out):
        lines = event.split("\n")
        for line_no, line in enumerate(lines):
            if line.startswith("data:") and line[5:].strip().startswith("{"):
                try:
                    payload = json.loads(line[5:])
                except ValueError:
                    continue
                payloads.setdefault(number, []).append((str(line_no), payload))
                for place, text in _string_leaves(payload, ()):
                    pieces.setdefault(place, []).append((number, str(line_no), place))
    touched: set[tuple[int, str]] = set()
    for place, spots in pieces.items():
        texts = [_leaf(_payload(payloads, n, ln), place) for n, ln, _ in spots]
        joined = "".join(texts)
        bad = [s for s in secrets if s and s in joined]
        if not bad:
            continue
        spans: list[tuple[int, int]] = []
        for secret in bad:
            start = joined.find(secret)
            while start >= 0:
                spans.append((start, start + len(secret)))
                start = joined.find(secret, start + 1)
        offset = 0
        for (number, line_no, _), text in zip(spots, texts):
            end = offset + len(text)
            if any(a < end and b > offset for a, b in spans):
                chars = list(text)
                for a, b in spans:
                    for i in range(max(a, offset), min(b, end)):
                        chars[i - offset] = ""
                first = min((max(a, offset) for a, b in spans if a < end and b > offset)) - offset
                chars[first] = REDACTED if first < len(chars) else ""
                _set_leaf(_payload(payloads, number, line_no), place, "".join(chars))
                touched.add((number, line_no))
            offset = end
    for number, line_no in touched:
        lines = out[number].split("\n")
        lines[int(line_no)] = "data: " + json.dumps(_payload(payloads, number, line_no), ensure_ascii=False)
        out[number] = "\n".join(lines)
    return out


def _payload(payloads: dict[int, list[tuple[str, Any]]], number: int, line_no: str) -> Any:
    return next(p for ln, p in payloads[number] if ln == line_no)


def _string_leaves(value: Any, place: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    if isinstance(value, str):
        return [(place, value)]
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _string_leaves(v, (*place, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _string_leaves(v, (*place, i))]
    return []


def _leaf(value: Any, place: tuple[Any, ...]) -> str:
    for step in place:
        value = value[step]
    return value


def _set_leaf(value: Any, place: tuple[Any, ...], text: str) -> None:
    for step in place[:-1]:
        value = value[step]
    value[place[-1]] = text


def encode_response_body(body: bytes, secrets: set[str]) -> dict[str, Any]:
    """How a response body is stored: JSON with the layout that gives back its bytes, text, or base64."""
    if not body:
        return {}
    try:
        text = scrub(body.decode("utf-8"), secrets)
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(scrub_bytes(body, secrets)).decode("ascii")}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {"body_text": text}
    for layout in layouts():
        if render_json(value, layout) == text:
            return {"body": value, "body_layout": layout}
    return {"body_text": text}


def encode_request_body(body: bytes, secrets: set[str]) -> dict[str, Any]:
    """How a request body is stored: JSON or text, keys replaced; a binary body only as its hash."""
    if not body:
        return {}
    try:
        text = scrub(body.decode("utf-8"), secrets)
    except UnicodeDecodeError:
        return {"body_sha256": hashlib.sha256(scrub_bytes(body, secrets)).hexdigest(), "body_bytes": len(body)}
    try:
        return {"body": json.loads(text)}
    except (ValueError, RecursionError):
        return {"body_text": text}


def layouts() -> list[str]:
    """Every ``body_layout`` name: a JSON layout, ``+ascii`` (escaped non-ASCII), ``+newline`` (a final newline)."""
    return [f"{name}{ascii_}{nl}" for name in _LAYOUTS for ascii_ in ("", "+ascii") for nl in ("", "+newline")]


def render_json(value: Any, layout: str) -> str:
    """``value`` serialised in ``layout``: the exact text the upstream sent."""
    name, *flags = layout.split("+")
    text = json.dumps(value, ensure_ascii="ascii" in flags, **_LAYOUTS[name])
    return text + "\n" if "newline" in flags else text


def _decode_body(where: object, response: dict[str, Any]) -> bytes:
    if "body" in response:
        layout = str(response.get("body_layout", "spaced"))
        if layout not in layouts():
            raise FixtureError(f"{where}: response.body_layout {layout!r} is unknown; use one of {', '.join(layouts())}")
        return render_json(response["body"], layout).encode("utf-8")
    if "body_text" in response:
        return str(response["body_text"]).encode("utf-8")
    if "body_base64" in response:
        try:
            return base64.b64decode(str(response["body_base64"]), validate=True)
        except (binascii.Error, ValueError):
            raise FixtureError(f"{where}: response.body_base64 is not base64; re-record it") from None
    return b""
