"""Latency the record/replay proxy adds per model call, against calling the same local upstream directly.

A local upstream on 127.0.0.1 answers a fixed OpenAI-style chat completion
(plain JSON, and streamed as SSE: 20 events and ``[DONE]``, one write each).
A keep-alive client calls it directly and through the proxy in each mode:
live (relayed), record (relayed and a fixture written atomically) and replay
(served from fixtures recorded beforehand). As in a real run, the upstream,
the client (the eval) and each proxy are separate processes, so no proxy's
threads compete for the GIL with the client, the upstream or another proxy.

Side by side: every round makes one call on each path (direct and the three
proxies, plain and streamed) in a rotating order, so the load of a shared
machine falls on all paths alike. A call is timed until the client has the
whole response (for a stream: its terminating chunk, not only the last
event). Figures per path: median, p90, p99; ``added`` is its median minus the
direct median of the same kind (plain or stream); ``paired`` the median of
the per-round differences; ``end lag`` (streams) the median time from the
last event to the end of the response. Target: at most 2 ms added at the median.

    python bench/bench_replay.py [--calls 1000] [--warmup 50] [--json out.json]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TARGET_MS = 2.0
MODES = ("live", "record", "replay")
KINDS = ("plain", "stream")
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
LAST_EVENT = EVENTS[-1]


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


# -- the helper processes: each prints one line (its URL), then serves until its stdin closes ------------


def _serve_upstream() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()


def _serve_proxy(mode: str, upstream: str, fixtures: Path) -> None:
    from evalrun.models.replay.proxy import ReplayProxy

    with ReplayProxy(mode, upstream=upstream) as proxy:  # type: ignore[arg-type]
        print(proxy.register_eval("bench", fixtures), flush=True)
        sys.stdin.read()


class _Helper:
    """One helper process of this script and the URL it printed."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        if not self.url:
            raise RuntimeError(f"helper {args} did not start")

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # a proxy waits for its fixtures to be on disk, then exits
        self.process.wait(timeout=120)


# -- the client -------------------------------------------------------------------------------------------


class _Client:
    """One keep-alive connection to one path; ``call()`` times one whole response."""

    def __init__(self, base: str, stream: bool, session: str | None) -> None:
        host, _, rest = base.removeprefix("http://").partition("/")
        self.prefix = "/" + rest if rest else ""
        name, port = host.split(":")
        self.conn = http.client.HTTPConnection(name, int(port))
        self.stream = stream
        self.body = REQUEST if not stream else REQUEST[:-1] + b', "stream": true}'
        self.headers = {"Content-Type": "application/json", "Authorization": "Bearer bench"}
        if session:
            self.headers["X-Evalrun-Session"] = session

    def call(self) -> tuple[float, float | None]:
        """Milliseconds until the whole response is in; for a stream also from its last event to its end."""
        started = time.perf_counter()
        self.conn.request("POST", f"{self.prefix}/v1/chat/completions", body=self.body, headers=self.headers)
        response = self.conn.getresponse()
        if not self.stream:
            data = response.read()
            ended = time.perf_counter()
            assert response.status == 200 and data == COMPLETION, (response.status, data[:200])
            return (ended - started) * 1000, None
        got = bytearray()
        last_event = None
        while piece := response.read1(65536):  # the chunks as they come; b"" only after the terminating chunk
            got += piece
            if last_event is None and got.endswith(LAST_EVENT):
                last_event = time.perf_counter()
        ended = time.perf_counter()
        assert response.status == 200 and bytes(got) == b"".join(EVENTS), (response.status, bytes(got[-200:]))
        assert last_event is not None
        return (ended - started) * 1000, (ended - last_event) * 1000

    def close(self) -> None:
        self.conn.close()


def _summary(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "median_ms": statistics.median(ordered),
        "p90_ms": ordered[int(len(ordered) * 0.9)],
        "p99_ms": ordered[int(len(ordered) * 0.99)],
    }


def run(calls: int, warmup: int) -> dict[str, Any]:
    upstream = _Helper("--serve-upstream")
    helpers = [upstream]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            recorded, written = Path(scratch) / "replayed", Path(scratch) / "recorded"
            # Replay's fixtures: recorded beforehand, one per call it will answer.
            recorder = _Helper("--serve-proxy", "record", upstream.url, str(recorded))
            for kind in KINDS:
                client = _Client(recorder.url, kind == "stream", kind)
                for _ in range(calls + warmup):
                    client.call()
                client.close()
            recorder.stop()
            bases = {"direct": upstream.url}
            for mode in MODES:
                helper = _Helper("--serve-proxy", mode, upstream.url, str(recorded if mode == "replay" else written))
                helpers.append(helper)
                bases[mode] = helper.url
            paths = [(kind, where) for kind in KINDS for where in ("direct", *MODES)]
            clients = {
                (kind, where): _Client(bases[where], kind == "stream", None if where == "direct" else kind)
                for kind, where in paths
            }
            timings: dict[tuple[str, str], list[float]] = {path: [] for path in paths}
            lags: dict[tuple[str, str], list[float]] = {path: [] for path in paths}
            for round_no in range(warmup + calls):
                shift = round_no % len(paths)
                for path in paths[shift:] + paths[:shift]:  # rotating: no path always follows the same one
                    took, lag = clients[path].call()
                    if round_no >= warmup:
                        timings[path].append(took)
                        if lag is not None:
                            lags[path].append(lag)
            for client in clients.values():
                client.close()
            for helper in helpers[1:]:
                helper.stop()
            del helpers[1:]
    finally:
        for helper in helpers:
            if helper.process.poll() is None:
                helper.stop()
    results: dict[str, Any] = {}
    for kind, where in paths:
        figures = _summary(timings[kind, where])
        if lags[kind, where]:
            figures["end_lag_ms"] = statistics.median(lags[kind, where])
        if where != "direct":
            direct = timings[kind, "direct"]
            figures["added_median_ms"] = figures["median_ms"] - statistics.median(direct)
            figures["paired_median_ms"] = statistics.median(a - b for a, b in zip(timings[kind, where], direct))
        results[f"{kind}/{where}"] = figures
    return results


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve-upstream"]:
        _serve_upstream()
        return 0
    if argv[:1] == ["--serve-proxy"]:
        _serve_proxy(argv[1], argv[2], Path(argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="timed rounds (one call per path each)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed rounds first")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    results = run(args.calls, args.warmup)
    print(f"{'path':<15}{'median ms':>10}{'p90 ms':>9}{'p99 ms':>9}{'end lag':>9}{'added':>11}{'paired':>11}")
    for name, figures in results.items():
        lag = f"{figures['end_lag_ms']:.3f}" if "end_lag_ms" in figures else "-"
        added = f"{figures['added_median_ms']:+.3f}" if "added_median_ms" in figures else "-"
        paired = f"{figures['paired_median_ms']:+.3f}" if "paired_median_ms" in figures else "-"
        print(f"{name:<15}{figures['median_ms']:>10.3f}{figures['p90_ms']:>9.3f}{figures['p99_ms']:>9.3f}"
              f"{lag:>9}{added:>11}{paired:>11}")
    worst = max(f["added_median_ms"] for f in results.values() if "added_median_ms" in f)
    verdict = "within" if worst <= TARGET_MS else "OVER"
    print(f"worst added median: {worst:.3f} ms ({verdict} the {TARGET_MS:g} ms target); "
          f"{args.calls} rounds, side by side; load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    if args.json:
        from evalrun.atomic import write_atomic

        write_atomic(args.json, json.dumps(results, indent=2) + "\n")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
