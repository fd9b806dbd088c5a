"""Which recording answers a replayed call: the request digest, and the diff shown when none does.

A replayed call is compared with its recording by a digest of the request:
the method, the path (without its query string), and the body with its
*volatile* fields removed — fields that may change from run to run without
changing what is asked:

- OpenAI style (chat completions, responses, embeddings...): ``user``,
  ``safety_identifier``, ``prompt_cache_key``, ``metadata``;
- Anthropic style (``/v1/messages``): ``metadata`` (``user_id``).

Everything else counts, including ``model``, ``stream`` and ``stream_options``
(they change the shape of the answer) and ``temperature``. Headers never count:
SDKs vary ``x-stainless-retry-count``, timeouts and idempotency keys per
attempt. A multipart body's random boundary is replaced before hashing. A body
that is not JSON is hashed as text, or as bytes when it is not UTF-8.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from evalrun.secrets import scrub

VOLATILE_FIELDS = {
    "openai": frozenset({"user", "safety_identifier", "prompt_cache_key", "metadata"}),
    "anthropic": frozenset({"metadata"}),
}
_BOUNDARY = re.compile(r"boundary=\"?([^\";,\s]+)")
_SHOWN = 60  # characters of a differing value shown in a diff


def request_style(path: str) -> str:
    """``anthropic`` for Anthropic's messages paths, else ``openai``."""
    return "anthropic" if "/messages" in path.split("?", 1)[0] else "openai"


def normalise_body(body: bytes, content_type: str, secrets: set[str]) -> tuple[Any, str | None]:
    """The body as stored and compared: (parsed JSON or text, None), or (None, sha256) for bytes."""
    if not body:
        return None, None
    match = _BOUNDARY.search(content_type or "")
    if match and "multipart/" in content_type.lower():
        body = body.replace(match.group(1).encode("latin-1", "replace"), b"evalrun-boundary")
    try:
        text = scrub(body.decode("utf-8"), secrets)
    except UnicodeDecodeError:
        from evalrun.models.replay.fixtures import scrub_bytes

        return None, hashlib.sha256(scrub_bytes(body, secrets)).hexdigest()
    try:
        return json.loads(text), None
    except (ValueError, RecursionError):
        return text, None


def stable_body(body: Any, path: str) -> Any:
    """``body`` without its volatile fields (for a JSON object body)."""
    if isinstance(body, dict):
        volatile = VOLATILE_FIELDS[request_style(path)]
        return {k: v for k, v in body.items() if k not in volatile}
    return body


def request_digest(method: str, path: str, body: Any, body_sha256: str | None) -> str:
    """The stable digest of a request: what must be equal for a recording to answer it."""
    route = path.split("?", 1)[0]
    canonical = json.dumps(
        [method.upper(), route, stable_body(body, route), body_sha256],
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def describe_difference(
    recorded: tuple[str, str, Any, str | None], now: tuple[str, str, Any, str | None], limit: int = 3
) -> str:
    """A short account of how a request differs from its recording: ``messages[1].content: recorded "…", now "…"``."""
    (m1, p1, b1, s1), (m2, p2, b2, s2) = recorded, now
    if m1.upper() != m2.upper() or p1.split("?", 1)[0] != p2.split("?", 1)[0]:
        return f"recorded {m1} {p1.split('?', 1)[0]}, now {m2} {p2.split('?', 1)[0]}"
    if s1 or s2:
        return "the binary request body changed"
    found: list[str] = []
    _diff(stable_body(b1, p1), stable_body(b2, p2), "", found, limit)
    return "; ".join(found) if found else "the request body changed"


def _diff(a: Any, b: Any, place: str, found: list[str], limit: int) -> None:
    if len(found) >= limit or a == b:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in list(a) + [k for k in b if k not in a]:
            where = f"{place}.{key}" if place else str(key)
            if key not in b:
                found.append(f"{where}: recorded {_show(a[key])}, now absent")
            elif key not in a:
                found.append(f"{where}: absent when recorded, now {_show(b[key])}")
            else:
                _diff(a[key], b[key], where, found, limit)
            if len(found) >= limit:
                return
        return
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{place}[{i}]", found, limit)
            if len(found) >= limit:
                return
        if len(a) != len(b) and len(found) < limit:
            found.append(f"{place or 'body'}: {len(a)} items when recorded, now {len(b)}")
        return
    start = 0
    if isinstance(a, str) and isinstance(b, str):
        # Long prompts: show both from a little before the first character that differs.
        start = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        start = max(0, start - 20)
    found.append(f"{place or 'body'}: recorded {_show(a, start)}, now {_show(b, start)}")


def _show(value: Any, start: int = 0) -> str:
    if isinstance(value, str):
        text = ("…" if start else "") + value[start:]
        return json.dumps(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…", ensure_ascii=False)
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
