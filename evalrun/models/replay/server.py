"""The proxy's HTTP plumbing: a stdlib threading server and its request handler.

This module owns the wire: keep-alive HTTP/1.1 on 127.0.0.1, request bodies
(sized or chunked), whole and chunked (streamed) responses, and the JSON error
shape. What to answer is decided by the proxy (``evalrun.models.replay.proxy``),
which the server calls as ``proxy.handle(handler)``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from evalrun.models.replay.upstream import HOP_HEADERS


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


class ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a new connection per call would cost more than the relay
    server_version = "evalrun-proxy"
    # Headers and body go out in separate writes; with Nagle on, delayed ACK
    # adds ~40 ms to every call.
    disable_nagle_algorithm = True
    timeout = 300  # an idle keep-alive connection frees its thread after this
    server: ProxyServer


    def do_request(self) -> None:
        try:
            self.server.proxy.handle(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away; nothing to answer
        except Exception as exc:  # a bug in the proxy must answer, not hang the eval
            self.close_connection = True
            message = f"evalrun proxy: internal error ({exc.__class__.__name__}: {exc}); please report it"
            self.server.proxy.note(message)
            try:
                self.send_error_json(500, "evalrun_proxy_error", message)
            except OSError:
                pass

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = do_request

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the proxy reports through its own log callback, never to stderr

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        body = bytearray()
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(body)
            body += self.rfile.read(size)
            self.rfile.readline()

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
        self.send_whole(status, {"Content-Type": "application/json", "X-Evalrun-Error": kind}, body)

    def start_stream(self, status: int, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in HOP_HEADERS:
                self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._client_gone = False

    def write_chunk(self, data: bytes) -> None:
        if not data or self._client_gone:
            return
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
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
