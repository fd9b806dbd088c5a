"""Relaying one request to the real model API: where it goes and how it is authenticated.

This module owns the upstream side of the proxy (record and live modes): the
choice of upstream, the headers that are passed on, the key that is injected,
and a small pool of keep-alive connections (a new TLS handshake per call would
cost more than the proxy itself).

Authentication. A client's own ``Authorization`` / ``x-api-key`` header passes
through, unless it is absent or holds ``evalrun.secrets.PLACEHOLDER``; then the
proxy fills it from the real environment it was given: ``OPENAI_API_KEY`` as
``Authorization: Bearer`` for OpenAI-style calls, ``ANTHROPIC_API_KEY`` as
``x-api-key`` for Anthropic-style calls. A call is Anthropic-style when its
path ends in ``/messages`` or it sends ``anthropic-version`` or ``x-api-key``.

Upstream. ``--upstream URL`` (its path, if any, is a prefix: ``https://host/api``
sends ``/v1/chat/completions`` to ``https://host/api/v1/chat/completions``);
without it, https://api.openai.com or https://api.anthropic.com by style. A
prefix ending in ``/v1`` (the SDKs' form of a base URL, ``http://host:port/v1``)
is the same upstream: its ``/v1`` is not doubled.
"""

from __future__ import annotations

import http.client
import socket
import zlib
import ssl
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from evalrun.secrets import PLACEHOLDER

DEFAULT_UPSTREAMS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
_KNOWN_PROVIDERS = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "openrouter.ai": "openrouter",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral",
    "api.together.xyz": "together",
    "api.deepseek.com": "deepseek",
    "api.x.ai": "xai",
    "api.fireworks.ai": "fireworks",
    "generativelanguage.googleapis.com": "google",
}
# Hop-by-hop headers (RFC 9110 7.6.1) and those the proxy sets itself.
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "x-evalrun-session",
    }
)
UPSTREAM_TIMEOUT_S = 600.0  # a long generation may take minutes; the eval's own timeout bounds it


MAX_DECODED_BYTES = 256 * 1024 * 1024  # a compressed request body never inflates beyond this


def content_decoder(encoding: str) -> "zlib._Decompress | None":
    """A decoder for a ``content-encoding`` evalrun decodes (gzip, deflate), else None."""
    name = encoding.strip().lower()
    if name in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if name == "deflate":
        return zlib.decompressobj(32 + zlib.MAX_WBITS)  # zlib-wrapped, as RFC 9110 means; auto-detected
    return None


def decoded_request_body(body: bytes, headers: Mapping[str, str]) -> bytes:
    """A request body as its sender meant it: a gzip or deflate body inflated (bounded), else as is."""
    encoding = next((v for k, v in headers.items() if k.lower() == "content-encoding"), "")
    decoder = content_decoder(encoding) if body else None
    if decoder is None:
        return body
    try:
        data = decoder.decompress(body, MAX_DECODED_BYTES)
        return data if not decoder.unconsumed_tail else body
    except zlib.error:
        return body


_MAX_LINE = 65536  # a chunk-size or trailer line longer than this is a broken upstream (http.client's bound)
_MAX_TRAILER_LINES = 100


def body_pieces(response: http.client.HTTPResponse) -> Iterator[bytes]:
    """The body of ``response`` as it arrives, transfer coding taken off, in pieces of all that has arrived.

    A streamed answer's events often come several to one read; ``HTTPResponse.read1``
    would hand them out one chunk at a time, and each would cost the relay a send
    to the client (and the client a wake-up). Here every piece is all the body
    the upstream has sent so far, so nothing waits and nothing is split. A
    chunked body is unframed here, as ``http.client`` does (same bounds); once its
    end is read the response is closed, so its connection can be reused.
    """
    if not response.chunked or response.length is not None or response.fp is None:
        # Not chunked, or no body to read (the answer to a HEAD has length 0): http.client's own reads.
        while piece := response.read1(65536):
            yield piece
        return
    assert response.fp is not None
    fp = response.fp
    pending = bytearray()  # read from the upstream, not yet unframed
    out = bytearray()  # unframed, not yet handed out
    left: int | None = None  # bytes of the current chunk still to come; None: a chunk-size line is next
    trailer_lines = -1  # -1: in the body; else the trailer lines read after the last chunk
    while True:
        progress = True
        while progress:
            progress = False
            if trailer_lines >= 0:
                end = pending.find(b"\n")
                if end < 0:
                    _bounded(pending, "trailer line")
                    break
                line = bytes(pending[: end + 1])
                del pending[: end + 1]
                if line in (b"\r\n", b"\n"):
                    if out:
                        yield bytes(out)
                    response.close()  # what http.client does at the end of a chunked body
                    return
                trailer_lines += 1
                if trailer_lines > _MAX_TRAILER_LINES:
                    raise http.client.HTTPException("too many trailer lines")
                progress = True
            elif left is None:
                end = pending.find(b"\n")
                if end < 0:
                    _bounded(pending, "chunk size")
                    break
                line = bytes(pending[:end]).split(b";", 1)[0]
                del pending[: end + 1]
                try:
                    size = int(line, 16)
                except ValueError:
                    raise http.client.IncompleteRead(b"") from None
                if size < 0:
                    raise http.client.IncompleteRead(b"")
                if size == 0:
                    trailer_lines = 0
                else:
                    left = size
                progress = True
            elif left > 0:
                if pending:
                    taken = pending[:left]
                    out += taken
                    del pending[: len(taken)]
                    left -= len(taken)
                    progress = True
            else:  # the CRLF that closes a chunk
                if len(pending) < 2:
                    break
                del pending[:2]
                left = None
                progress = True
        if out:
            yield bytes(out)
            out.clear()
        data = fp.read1(65536)  # what is buffered, else one read: never waits for more than one byte
        if not data:
            if trailer_lines >= 0:  # a few servers end without the trailer's empty line; http.client allows it
                response.close()
                return
            raise http.client.IncompleteRead(b"")
        pending += data


def _bounded(pending: bytearray, what: str) -> None:
    if len(pending) > _MAX_LINE:
        raise http.client.LineTooLong(what)


class UpstreamError(Exception):
    """The upstream could not be reached or broke the connection; one line."""


@dataclass(frozen=True)
class Target:
    """Where one call goes: the upstream's origin and the full path there."""

    base_url: str
    path: str
    provider: str


def api_style(path: str, headers: Mapping[str, str]) -> str:
    """``anthropic`` or ``openai``: which API family a request speaks."""
    lowered = {k.lower() for k in headers}
    if path.split("?", 1)[0].rstrip("/").endswith("/messages") or lowered & {"anthropic-version", "x-api-key"}:
        return "anthropic"
    return "openai"


def choose_target(upstream: str | None, path: str, style: str) -> Target:
    """The upstream URL and path for a request of ``style`` to ``path``."""
    base = upstream or DEFAULT_UPSTREAMS[style]
    parts = urlsplit(base)
    prefix = parts.path.rstrip("/")
    if prefix.endswith("/v1") and (path == "/v1" or path.startswith(("/v1/", "/v1?"))):
        # ``http://host:port/v1`` is how SDKs spell a base URL; the SDK's path already starts with /v1.
        prefix = prefix[: -len("/v1")]
    origin = f"{parts.scheme}://{parts.netloc}"
    host = (parts.hostname or "").lower()
    return Target(base_url=origin, path=prefix + path, provider=_KNOWN_PROVIDERS.get(host, style))


def upstream_headers(headers: Mapping[str, str], style: str, key_env: Mapping[str, str]) -> dict[str, str]:
    """The headers sent upstream: hop-by-hop ones dropped, the key filled in when the client had none."""
    out = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}
    out["Accept-Encoding"] = "identity"  # recorded bodies must be readable; loopback gains nothing from gzip
    lowered = {k.lower(): k for k in out}
    if style == "anthropic":
        name, value = "x-api-key", key_env.get("ANTHROPIC_API_KEY", "")
    else:
        name, value = "authorization", key_env.get("OPENAI_API_KEY", "")
        value = f"Bearer {value}" if value else ""
    current = out.get(lowered[name], "") if name in lowered else ""
    if value and (not current or PLACEHOLDER in current):
        if name in lowered:
            del out[lowered[name]]
        out["Authorization" if name == "authorization" else name] = value
    return out


class ConnectionPool:
    """Idle keep-alive connections per upstream origin, shared by the proxy's threads."""

    def __init__(self, timeout: float = UPSTREAM_TIMEOUT_S) -> None:
        self._timeout = timeout
        self._idle: dict[str, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None

    def request(
        self, target: Target, method: str, headers: dict[str, str], body: bytes
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send one request; retry once on a fresh connection if a pooled one had gone stale."""
        for attempt in (0, 1):
            conn, reused = self._take(target.base_url)
            try:
                conn.request(method, target.path, body=body or None, headers=headers)
                return conn, conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                if reused and attempt == 0:
                    continue  # the server closed an idle connection: not the call's fault
                raise UpstreamError(f"{target.base_url}: connection lost ({exc.__class__.__name__})") from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise UpstreamError(f"{target.base_url}: {_describe(exc)}") from None
        raise AssertionError("unreachable")

    def give_back(self, base_url: str, conn: http.client.HTTPConnection, response: http.client.HTTPResponse) -> None:
        """Return a connection whose response was read to the end, or close it."""
        if response.will_close or not response.isclosed():
            conn.close()
            return
        with self._lock:
            self._idle.setdefault(base_url, []).append(conn)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()

    def _take(self, base_url: str) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            conns = self._idle.get(base_url)
            if conns:
                return conns.pop(), True
        parts = urlsplit(base_url)
        if parts.scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname or "", parts.port, timeout=self._timeout, context=self._ssl
            )
        else:
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=self._timeout)
        try:
            conn.connect()
            if conn.sock is not None:
                conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as exc:
            conn.close()
            raise UpstreamError(f"{base_url}: {_describe(exc)}") from None
        return conn, False


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused; is the upstream running?"
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, socket.gaierror):
        return "host not found"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error ({exc.reason or exc.__class__.__name__})"
    return f"{exc.__class__.__name__}: {exc}"
