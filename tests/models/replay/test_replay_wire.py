"""The proxy's stream relay on the wire: what has arrived goes out together, framing read like http.client.

A streamed answer's events often reach the proxy several to one read. The
proxy sends all that has arrived in one chunk (one send, one wake-up of the
client) instead of one send per upstream chunk, and a replayed stream in one
chunk with its end. Shown here by counting the chunks a raw client receives,
with real sockets; ``body_pieces`` (the unframing) has property tests.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrun.models.replay.proxy import ReplayProxy
from evalrun.models.replay.upstream import body_pieces

from harness.fakes_upstream import FakeUpstream

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
EVENTS = [f"data: {json.dumps({'model': 'm', 'choices': [{'delta': {'content': f'part {i} '}}]})}\n\n".encode()
          for i in range(12)] + [b"data: [DONE]\n\n"]


def framed(payloads: list[bytes], extensions: list[str] | None = None, trailers: list[bytes] = ()) -> bytes:
    ext = extensions or [""] * len(payloads)
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), e.encode(), p) for p, e in zip(payloads, ext))
    return body + b"0\r\n" + b"".join(t + b"\r\n" for t in trailers) + b"\r\n"


def read_pieces(wire: bytes, cuts: list[int], method: str = "POST") -> tuple[list[bytes], http.client.HTTPResponse]:
    """``body_pieces`` of a response sent as ``wire``, written in pieces cut at ``cuts``; the writer then closes."""
    ours, theirs = socket.socketpair()

    def write() -> None:
        bounds = [0, *sorted({c % (len(wire) + 1) for c in cuts}), len(wire)]
        for a, b in zip(bounds, bounds[1:]):
            if b > a:
                theirs.sendall(wire[a:b])
        theirs.shutdown(socket.SHUT_WR)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        response = http.client.HTTPResponse(ours, method=method)
        response.begin()
        return list(body_pieces(response)), response
    finally:
        writer.join(10)
        ours.close()
        theirs.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    payloads=st.lists(st.binary(min_size=1, max_size=300), max_size=12),
    extensions=st.data(),
    trailers=st.lists(st.sampled_from([b"x-checksum: 1", b"X-Trailer:two"]), max_size=3),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=8),
)
def test_body_pieces_give_back_exactly_the_chunked_body_however_it_is_cut(payloads, extensions, trailers, cuts):
    ext = [extensions.draw(st.sampled_from(["", ";name=value", "; a"])) for _ in payloads]
    pieces, response = read_pieces(HEAD + framed(payloads, ext, trailers), cuts)
    assert b"".join(pieces) == b"".join(payloads)
    assert all(pieces)  # never an empty piece: each costs a send
    assert response.isclosed()  # read to its end: its connection may be reused


@settings(max_examples=100, deadline=None)
@given(body=st.binary(max_size=400), cuts=st.lists(st.integers(min_value=0, max_value=1000), max_size=5))
def test_a_broken_chunked_body_is_an_http_error_never_a_crash_or_a_hang(body, cuts):
    try:
        pieces, _ = read_pieces(HEAD + body, cuts)
    except http.client.HTTPException:
        return  # the proxy answers it as an upstream that broke off
    assert isinstance(pieces, list)


@pytest.mark.parametrize(
    ("wire", "error"),
    [
        (b"zz\r\nhello\r\n0\r\n\r\n", http.client.IncompleteRead),
        (b"-5\r\nhello\r\n0\r\n\r\n", http.client.IncompleteRead),
        (b"5\r\nhel", http.client.IncompleteRead),  # the upstream went away mid-chunk
        (b"1" * 70_000, http.client.LineTooLong),
    ],
    ids=["not-hex", "negative", "cut-off", "endless-size-line"],
)
def test_malformed_framing_is_refused_as_http_client_would(wire, error):
    with pytest.raises(error):
        read_pieces(HEAD + wire, [])


def test_the_answer_to_a_head_request_has_no_pieces_even_when_it_says_chunked():
    # Read as a body, it would wait for bytes the upstream never sends (here: reads what follows).
    pieces, _ = read_pieces(HEAD + framed([b"not a body"]), [], "HEAD")
    assert pieces == []


def test_all_that_has_arrived_is_one_piece():
    pieces, _ = read_pieces(HEAD + framed(EVENTS), [])  # one write: all there at the first read
    assert pieces == [b"".join(EVENTS)]


class _OneWriteUpstream:
    """An upstream that sends a whole streamed answer, framed as one chunk per event, in one write."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(65536)
                head, _, body = request.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(HEAD + framed(EVENTS))
                conn.recv(1)  # until the proxy closes or reuses the connection

    def close(self) -> None:
        self.listener.close()


def raw_stream_call(base: str) -> list[bytes]:
    """A streamed call made on a raw socket; the answer's chunks as framed on the wire."""
    host, port = base.removeprefix("http://").split("/", 1)[0].split(":")
    path = "/" + base.removeprefix("http://").split("/", 1)[1] + "/v1/chat/completions"
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                       "stream_options": {"include_usage": True}}).encode()  # its usage chunk is the client's
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body))
        wire = b""
        while data := sock.recv(65536):
            wire += data
    head, _, rest = wire.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()
    chunks = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return chunks
        chunks.append(rest[:size])
        rest = rest[size + 2:]


@pytest.mark.parametrize("mode", ["live", "record"])
def test_events_that_arrive_together_are_relayed_in_one_chunk(tmp_path, mode):
    upstream = _OneWriteUpstream()
    try:
        with ReplayProxy(mode, upstream=upstream.url) as proxy:  # type: ignore[arg-type]
            chunks = raw_stream_call(proxy.register_eval("s", tmp_path))
            report = proxy.eval_report("s")
    finally:
        upstream.close()
    assert chunks == [b"".join(EVENTS)]  # not one send per upstream chunk
    assert report.calls == 1
    if mode == "record":
        fixture = json.loads((tmp_path / "s" / "0001.json").read_text())
        assert fixture["response"]["stream"] == [e.decode() for e in EVENTS]  # still kept event by event


def test_a_replayed_stream_goes_out_in_one_chunk_byte_for_byte(tmp_path):
    with FakeUpstream() as upstream, ReplayProxy("record", upstream=upstream.url) as proxy:
        recorded = raw_stream_call(proxy.register_eval("s", tmp_path))
    with ReplayProxy("replay") as proxy:
        replayed = raw_stream_call(proxy.register_eval("s", tmp_path))
        report = proxy.eval_report("s")
    assert recorded and len(replayed) == 1
    events = json.loads((tmp_path / "s" / "0001.json").read_text())["response"]["stream"]
    assert replayed[0] == "".join(events).encode()
    assert report.calls == 1 and report.missing == ()
