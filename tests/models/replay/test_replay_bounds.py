"""The proxy reads no more of a request than it must: the token first, strict chunk framing, stated bounds.

Real sockets against a real proxy: a request whose answer is known before its
body (no run token, no such eval) is answered without reading the body; a
chunk size that is not plain hexadecimal (``-1``, ``0x10``, ``1_0``, ``+5``) is
a 400 at once, never a read until the client closes; a body over the limit is
a 413 before it is read.
"""

from __future__ import annotations

import socket

import httpx
import pytest

from evalrun.models.replay.proxy import ReplayProxy
from evalrun.models.replay.server import MAX_REQUEST_BODY

from harness.fakes_upstream import FakeUpstream

WAIT_S = 10.0  # only ever reached when the proxy waits for a body it should not read


def _head(proxy: ReplayProxy, path: str, headers: str, after: bytes = b"") -> bytes:
    """Send a request's head (and ``after``) on a raw socket, leave it open, and return the answer's head."""
    port = int(proxy.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT_S) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + after)
        got = b""
        try:
            while b"\r\n\r\n" not in got:
                piece = sock.recv(65536)
                if not piece:
                    break
                got += piece
        except TimeoutError:
            pytest.fail(f"no answer within {WAIT_S:g} s: the proxy is reading a body it should have refused")
        return got


@pytest.fixture
def proxy():
    with FakeUpstream() as upstream, ReplayProxy("live", upstream=upstream.url) as p:
        p.base = p.register_eval("bounded", None)
        p.upstream_requests = upstream.requests
        yield p


@pytest.mark.parametrize(
    "headers",
    ["Transfer-Encoding: chunked\r\n", "Content-Length: 1000000\r\n", f"Content-Length: {10 * MAX_REQUEST_BODY}\r\n"],
    ids=["chunked", "sized", "oversized"],
)
def test_a_request_without_the_token_is_refused_before_its_body_is_read(proxy, headers):
    # The body never comes: the refusal must not wait for it.
    head = _head(proxy, "/t/not-the-token/v1/chat/completions", headers)
    assert head.startswith(b"HTTP/1.1 401"), head[:200]
    assert proxy.upstream_requests == []


def test_a_request_for_no_registered_eval_is_refused_before_its_body_is_read(proxy):
    head = _head(proxy, f"/t/{proxy.token}/e/nobody/v1/chat/completions", "Transfer-Encoding: chunked\r\n")
    assert head.startswith(b"HTTP/1.1 404"), head[:200]


def test_a_small_refused_body_is_still_read_so_the_connection_stays_usable(proxy):
    with httpx.Client(timeout=WAIT_S, trust_env=False) as client:
        refused = client.post(f"{proxy.url}/t/wrong/v1/chat/completions", json={"model": "m"})
        assert refused.status_code == 401
        answered = client.post(f"{proxy.base}/v1/chat/completions",
                               json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert answered.status_code == 200


@pytest.mark.parametrize("size", [b"-1", b"-0", b"0x10", b"1_0", b"+5", b" ", b"", b"g", b"1" * 17])
def test_a_chunk_size_that_is_not_plain_hexadecimal_is_a_400_at_once(proxy, size):
    # After the bad size line the client keeps the connection open and sends data, never an end.
    head = _head(proxy, f"{proxy.base[len(proxy.url):]}/v1/chat/completions", "Transfer-Encoding: chunked\r\n",
                 size + b"\r\n" + b"x" * 65536)
    assert head.startswith(b"HTTP/1.1 400"), head[:200]
    assert b"evalrun_bad_request_body" in head and b"x-should-retry: false" in head.lower()
    assert proxy.upstream_requests == []


def test_a_chunked_body_over_the_limit_is_a_413_before_it_is_read(proxy):
    head = _head(proxy, f"{proxy.base[len(proxy.url):]}/v1/chat/completions", "Transfer-Encoding: chunked\r\n",
                 b"%x\r\n" % (MAX_REQUEST_BODY + 1) + b"x" * 65536)
    assert head.startswith(b"HTTP/1.1 413"), head[:200]


def test_chunk_extensions_and_trailers_are_still_read(proxy):
    body = b'{"model": "m", "messages": [{"role": "user", "content": "framed"}]}'
    wire = b"A;name=value\r\n" + body[:10] + b"\r\n" + b"%X\r\n" % (len(body) - 10) + body[10:] + b"\r\n0\r\nX-Trailer: 1\r\n\r\n"
    head = _head(proxy, f"{proxy.base[len(proxy.url):]}/v1/chat/completions",
                 "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n", wire)
    assert head.startswith(b"HTTP/1.1 200"), head[:300]
    assert proxy.upstream_requests[0].body["messages"][0]["content"] == "framed"
