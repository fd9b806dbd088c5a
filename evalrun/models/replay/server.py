"""The proxy's HTTP plumbing: a stdlib threading server and its request handler.

This module owns the wire: keep-alive HTTP/1.1 on 127.0.0.1, request bodies
(sized or chunked), whole and chunked (streamed) responses, and the JSON error
shape. What to answer is decided by the proxy (``evalrun.models.replay.proxy``),
which the server calls as ``proxy.handle(handler)``.
"""

from __future__ import annotations

import json
import re
import select
import socket
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from evalrun.models.replay.upstream import HOP_HEADERS


MAX_REQUEST_BODY = 64 * 1024 * 1024  # larger request bodies are refused (413), never read into memory
MAX_REFUSED_BODY = 64 * 1024  # a refused request's (no token, no eval) sized body up to this is read: the connection stays
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")  # RFC 9112 chunk-size: hex digits only; no sign, prefix or "_"
_MAX_TRAILER_LINES = 100
_POLL = hasattr(select, "poll")  # not on Windows: select() there


class BodyRefused(Exception):
    """A request body the proxy will not read (further); answered with ``status`` and the connection closed."""

    status = 400
    kind = "evalrun_bad_request_body"


class BodyTooLarge(BodyRefused):
    """A request body over the limit (``MAX_REQUEST_BODY``)."""

    status = 413
    kind = "evalrun_request_too_large"


class BadBodyFraming(BodyRefused):
    """A chunk size that is no plain hexadecimal number, a Content-Length that is no byte count."""

    status = 400
    kind = "evalrun_bad_request_body"


class RequestHandlerOwner(Protocol):
    """The proxy, as the server sees it."""

    def handle(self, handler: ProxyHandler) -> None: ...

    def note(self, line: str) -> None: ...


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # several evals connect at once
    proxy: RequestHandlerOwner

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name (getfqdn), which can take seconds.
        if self.allow_reuse_address:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(self.server_address)
        self.server_address = self.socket.getsockname()
        self.server_name, self.server_port = "127.0.0.1", self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that resets its connection mid-request is no news: never a traceback on stderr.
        return


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a new connection per call would cost more than the relay
    server_version = "evalrun-proxy"
    # Headers and body go out in separate writes; with Nagle on, delayed ACK
    # adds ~40 ms to every call.
    disable_nagle_algorithm = True
    timeout = 300  # an idle keep-alive connection frees its thread after this
    server: ProxyServer
    _body: bytes | None = None
    _client_gone = False
    _poller: Any = None  # select.poll on this connection, made once: a stream asks before every chunk

    def do_request(self) -> None:
        self._client_gone = False
        self._body = None  # one handler serves every request of a keep-alive connection
        try:
            self.server.proxy.handle(self)
        except BodyRefused as exc:
            self.close_connection = True
            try:
                self.send_error_json(exc.status, exc.kind, f"evalrun proxy: {exc}")
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away; nothing to answer
        except Exception as exc:  # a bug in the proxy must answer, not hang the eval
            self.close_connection = True
            message = f"evalrun proxy: internal error ({exc.__class__.__name__}); please report it"
            self.server.proxy.note(message)
            try:
                self.send_error_json(400, "evalrun_proxy_error", message)
            except OSError:
                pass

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_request

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the proxy reports through its own log callback, never to stderr

    def read_body(self, limit: int = MAX_REQUEST_BODY) -> bytes:
        """The request body (sized or chunked), at most ``limit`` bytes; read once.

        Raise ``BodyTooLarge`` (413) before reading a body over the limit, ``BadBodyFraming``
        (400) at the first size or framing that is wrong: nothing is read past either.
        """
        if self._body is not None:
            return self._body
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = self._read_chunked(limit)
        else:
            raw = (self.headers.get("Content-Length") or "0").strip()
            if not raw.isdigit() or len(raw) > 12:
                raise BadBodyFraming(f"Content-Length {raw[:20]!r} is not a byte count")
            length = int(raw)
            if length > limit:
                raise BodyTooLarge(f"request body of {length} bytes; the proxy takes at most {limit}")
            body = self.rfile.read(length) if length > 0 else b""
        self._body = body
        return body

    def skip_body(self) -> None:
        """For a request refused whatever its body says: read a small sized body (the connection
        stays usable), else none of it (a chunked one, a large one), and close the connection after
        the answer: no read waits for a body that may never end."""
        raw = (self.headers.get("Content-Length") or "0").strip()
        chunked = "chunked" in self.headers.get("Transfer-Encoding", "").lower()
        if chunked or not raw.isdigit() or len(raw) > 12 or int(raw) > MAX_REFUSED_BODY:
            self.close_connection = True
            return
        self.read_body(MAX_REFUSED_BODY)

    def _read_chunked(self, limit: int) -> bytes:
        body = bytearray()
        while True:
            line = self.rfile.readline(1026)
            if not line.endswith(b"\n"):
                raise BadBodyFraming("a chunk-size line is unterminated or longer than 1024 bytes")
            size_text = line.split(b";", 1)[0].strip(b" \t\r\n")  # a chunk extension is ignored
            if not _CHUNK_SIZE.fullmatch(size_text):
                raise BadBodyFraming(f"chunk size {size_text[:20]!r} is not a hexadecimal number")
            size = int(size_text, 16)
            if size == 0:
                for _ in range(_MAX_TRAILER_LINES + 1):
                    if self.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        return bytes(body)  # the trailers' end
                raise BadBodyFraming(f"more than {_MAX_TRAILER_LINES} trailer lines")
            if len(body) + size > limit:
                raise BodyTooLarge(f"request body over {limit} bytes")
            data = self.rfile.read(size)
            if len(data) < size:
                raise BadBodyFraming("the body ended inside a chunk")
            body += data
            if self.rfile.readline(3) not in (b"\r\n", b"\n"):
                raise BadBodyFraming("a chunk is longer than its size")

    def peer_closed(self) -> bool:
        """True when the client has closed its side: it will never read this answer."""
        try:
            if _POLL:  # a registered poll object costs a tenth of a select() call
                if self._poller is None:
                    self._poller = select.poll()
                    self._poller.register(self.connection, select.POLLIN | select.POLLPRI)
                if not self._poller.poll(0):
                    return False
            elif not select.select([self.connection], [], [], 0)[0]:
                return False
            # Readable: either the end of the client's side, or the next request of a keep-alive client.
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def client_gone(self) -> bool:
        """True when a streamed answer did not reach its client whole (a write failed or found it gone).

        Not a fresh look at the socket: a client may close as soon as it has the last
        event, before the stream's terminating chunk, and it did have the whole answer.
        """
        return self._client_gone

    def send_whole(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in HOP_HEADERS:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_error_json(self, status: int, kind: str, message: str) -> None:
        body = json.dumps({"type": "error", "error": {"type": kind, "code": kind, "message": message}}).encode()
        # x-should-retry: both official SDKs obey it before looking at the status.
        headers = {"Content-Type": "application/json", "X-Evalrun-Error": kind, "X-Should-Retry": "false"}
        self.send_whole(status, headers, body)

    def start_stream(self, status: int, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in HOP_HEADERS:
                self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._client_gone = False

    def write_chunk(self, data: bytes, watch: bool = False, end: bool = False) -> None:
        """Send one chunk; ``watch``: first make sure the client is still there to read it;
        ``end``: the stream's end goes in the same send (then no ``end_stream``)."""
        if self._client_gone:
            return
        if watch and data and self.peer_closed():
            # The client gave up (timed out) before this part of the answer: it never had it whole.
            self._client_gone = True
            self.close_connection = True
            return
        wire = b"%x\r\n%s\r\n" % (len(data), data) if data else b""
        if not wire and not end:
            return
        try:
            self.wfile.write(wire + b"0\r\n\r\n" if end else wire)
        except (BrokenPipeError, ConnectionResetError):
            # Keep reading upstream: the call is paid for and its usage must be counted.
            self._client_gone = True
            self.close_connection = True

    def end_stream(self) -> None:
        if not self._client_gone:
            try:
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
