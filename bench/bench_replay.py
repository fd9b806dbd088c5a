"""Latency the record/replay proxy adds per model call, against calling the same local upstream directly.

A local upstream on 127.0.0.1 answers a fixed OpenAI-style chat completion
(plain JSON, and streamed as SSE). One keep-alive client calls it directly,
then through the proxy in live mode (relayed), record mode (relayed and a
fixture written atomically), and replay mode (served from the fixture). The
added latency is the median of each path minus the median of the direct one.
Target: at most 2 ms added at the median.

    /tmp/venv/bin/python bench/bench_replay.py [--calls 1000]
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from evalrun.atomic import write_atomic
from evalrun.models.replay.proxy import ReplayProxy

TARGET_MS = 2.0
REQUEST = json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hello " * 50}]}).encode()
COMPLETION = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1733140000, "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi " * 100}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 60, "completion_tokens": 100, "total_tokens": 160},
}).encode()
EVENTS = [
    f"data: {json.dumps({'model': 'gpt-4o-mini-2024-07-18', 'choices': [{'delta': {'content': 'hi '}}]})}\n\n".encode()
    for _ in range(20)
] + [b"data: [DONE]\n\n"]


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else delayed ACK adds ~40 ms per call and hides what is measured

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        if body.get("stream"):
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in EVENTS:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(COMPLETION)))
            self.end_headers()
            self.wfile.write(COMPLETION)


def _start_upstream() -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _measure(base: str, calls: int, stream: bool, session: str | None = None) -> list[float]:
    """Milliseconds per call, one keep-alive connection, the whole response read."""
    host, _, rest = base.removeprefix("http://").partition("/")
    prefix = "/" + rest if rest else ""
    name, port = host.split(":")
    conn = http.client.HTTPConnection(name, int(port))
    body = REQUEST if not stream else REQUEST[:-1] + b', "stream": true}'
    headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
    if session:
        headers["X-Evalrun-Session"] = session
    timings = []
    for _ in range(calls):
        started = time.perf_counter()
        conn.request("POST", f"{prefix}/v1/chat/completions", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status == 200, response.status
    conn.close()
    return timings


def _summary(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "median_ms": statistics.median(ordered),
        "p90_ms": ordered[int(len(ordered) * 0.9)],
        "p99_ms": ordered[int(len(ordered) * 0.99)],
    }


def run(calls: int, warmup: int) -> dict[str, Any]:
    upstream = _start_upstream()
    upstream_url = f"http://127.0.0.1:{upstream.server_address[1]}"
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch:
        fixtures = Path(scratch) / "fixtures"
        for stream in (False, True):
            kind = "stream" if stream else "plain"
            _measure(upstream_url, warmup, stream)
            direct = _summary(_measure(upstream_url, calls, stream))
            results[f"{kind}/direct"] = direct
            for mode in ("live", "record", "replay"):
                with ReplayProxy(mode, upstream=upstream_url) as proxy:  # type: ignore[arg-type]
                    base = proxy.register_eval("bench", fixtures)
                    session = f"{kind}-{calls + warmup}"
                    _measure(base, warmup, stream, session)
                    measured = _summary(_measure(base, calls, stream, session))
                measured["added_median_ms"] = measured["median_ms"] - direct["median_ms"]
                results[f"{kind}/{mode}"] = measured
    upstream.shutdown()
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    results = run(args.calls, args.warmup)
    print(f"{'path':<16}{'median ms':>11}{'p90 ms':>9}{'p99 ms':>9}{'added (median)':>17}")
    for name, figures in results.items():
        added = f"{figures['added_median_ms']:+.3f} ms" if "added_median_ms" in figures else "-"
        print(f"{name:<16}{figures['median_ms']:>11.3f}{figures['p90_ms']:>9.3f}{figures['p99_ms']:>9.3f}{added:>17}")
    worst = max(f["added_median_ms"] for f in results.values() if "added_median_ms" in f)
    verdict = "within" if worst <= TARGET_MS else "OVER"
    print(f"worst added median: {worst:.3f} ms ({verdict} the {TARGET_MS:g} ms target); {args.calls} calls per path")
    if args.json:
        write_atomic(args.json, json.dumps(results, indent=2) + "\n")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
