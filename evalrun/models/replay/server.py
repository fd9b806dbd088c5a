"""The proxy's HTTP plumbing: a stdlib threading server and its request handler.

This module owns the wire: keep-alive HTTP/1.1 on 127.0.0.1, request bodies
(sized or chunked), whole and chunked (streamed) responses, and the JSON error
shape. What to answer is decided by the proxy (``evalrun.models.replay.proxy``),
which the server calls as ``proxy.handle(handler)``.
"""

from __future__ import annotations

import json
import select
import socket
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from evalrun.models.replay.upstream import HOP_HEADERS


MAX_REQUEST_BODY = 64 * 1024 * 1024  # larger request bodies are refused (413), never read into memory
_POLL = hasattr(select, "poll")  # not on Windows: select() there


class BodyTooLarge(Exception):
    """A request body over ``MAX_REQUEST_BODY``, or a length that is no number."""


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
        except BodyTooLarge as exc:
            self.close_connection = True
            try:
                self.send_error_json(413, "evalrun_request_too_large", f"evalrun proxy: {exc}")
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

    def read_body(self) -> bytes:
        """The request body (sized or chunked), at most ``MAX_REQUEST_BODY`` bytes; read once."""
        if self._body is not None:
            return self._body
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = self._read_chunked()
        else:
            raw = (self.headers.get("Content-Length") or "0").strip()
            if not raw.isdigit() or len(raw) > 12:
                raise BodyTooLarge(f"Content-Length {raw[:20]!r} is not a byte count")
            length = int(raw)
            if length > MAX_REQUEST_BODY:
                raise BodyTooLarge(f"request body of {length} bytes; the proxy takes at most {MAX_REQUEST_BODY}")
            body = self.rfile.read(length) if length > 0 else b""
        self._body = body
        return body

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            line = self.rfile.readline(1024).split(b";")[0].strip() or b"0"
            try:
                size = int(line, 16)
            except ValueError:
                raise BodyTooLarge(f"chunk size {line[:20]!r} is not hexadecimal") from None
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body)
            if len(body) + size > MAX_REQUEST_BODY:
                raise BodyTooLarge(f"request body over {MAX_REQUEST_BODY} bytes")
            body += self.rfile.read(size)
            self.rfile.readline(1024)

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
