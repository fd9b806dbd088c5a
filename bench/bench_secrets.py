"""Record-mode CPU per recorded MB, with ``secrets.scrub`` as it is and as it was (a search per key fragment).

Record mode redacts every string of every fixture (``fixtures.redact`` calls
``secrets.scrub`` on each JSON string, each stream event, each header), with
the run's keys and the proxy's token as secrets. The former ``scrub`` searched
the text once per 8-character fragment of every key (a real OpenAI project key
is ~164 characters: ~157 fragments); the current one scans it once.

Two figures, old and new side by side, in alternating rounds so a shared
machine's load falls on both alike:

- ``proxy``: the CPU time of a record-mode proxy process (its own
  ``process_time`` from ready to stopped, fixtures on disk) per MB of fixtures
  it wrote, for ``--calls`` calls (half plain, half streamed) to a local
  upstream in another process, made by this process;
- ``redact``: the CPU time of ``fixtures.redact`` alone on those fixtures' JSON,
  per MB.

    python bench/bench_secrets.py [--calls 300] [--rounds 3] [--json out.json]

The old implementation lives in this script only (``old_scrub``), as the
reference it is measured against.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Secrets shaped like a real record run's: an OpenAI project key, an Anthropic key, the proxy's token.
OPENAI_KEY = "sk-proj-" + "Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF" * 5 + "xYz1"
ANTHROPIC_KEY = "sk-ant-api03-" + "Qr5tU8wX1zA4cD7fG0hJ3kL6nP9sV2yB" * 3 + "AbCd-EfGhIjKlMn"
KEYS = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}
WORDS = "the model answers with a long and ordinary paragraph of text about weather, code and tables ".split()
CONTENT = " ".join(WORDS[i % len(WORDS)] for i in range(700))  # ~4 KB of answer text
COMPLETION = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 1733140000, "model": "gpt-4o-mini-2024-07-18",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": CONTENT}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 600, "completion_tokens": 900, "total_tokens": 1500},
}).encode()
EVENTS = [
    ("data: " + json.dumps({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "gpt-4o-mini-2024-07-18",
                            "choices": [{"index": 0, "delta": {"content": f"{WORDS[i % len(WORDS)]} "}}]}) + "\n\n").encode()
    for i in range(150)
] + [b"data: [DONE]\n\n"]
PROMPT = " ".join(WORDS[i % len(WORDS)] for i in range(300))


# -- the former implementation, kept here only as the reference -------------------------------------------

def old_scrub(text: str, secrets: Iterable[str], replacement: str | None = None) -> str:
    from evalrun.secrets import FRAGMENT, PLACEHOLDER, REDACTED

    replacement = REDACTED if replacement is None else replacement
    if not text:
        return text
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    pieces = _old_pieces(frozenset(values))
    if not any(piece in text for piece in pieces):
        return text

    def occurrences(needle: str) -> list[int]:
        found, start = [], text.find(needle)
        while start != -1:
            found.append(start)
            start = text.find(needle, start + 1)
        return found

    spans: list[tuple[int, int]] = []
    for secret in values:
        if len(secret) <= FRAGMENT:
            spans += [(start, start + len(secret)) for start in occurrences(secret)]
            continue
        for offset in range(0, len(secret) - FRAGMENT + 1):
            gram = secret[offset : offset + FRAGMENT]
            start = text.find(gram)
            while start != -1:
                left, right, s_left, s_right = start, start + FRAGMENT, offset, offset + FRAGMENT
                while left > 0 and s_left > 0 and text[left - 1] == secret[s_left - 1]:
                    left, s_left = left - 1, s_left - 1
                while right < len(text) and s_right < len(secret) and text[right] == secret[s_right]:
                    right, s_right = right + 1, s_right + 1
                spans.append((left, right))
                start = text.find(gram, start + 1)
    kept = [(m, m + len(PLACEHOLDER)) for m in occurrences(PLACEHOLDER)]
    spans = [(a, b) for a, b in spans if not any(k0 <= a and b <= k1 for k0, k1 in kept)]
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, last = [], 0
    for start, end in merged:
        out += [text[last:start], replacement]
        last = end
    return "".join(out + [text[last:]])


_OLD_PIECES: dict[frozenset[str], tuple[str, ...]] = {}


def _old_pieces(values: frozenset[str]) -> tuple[str, ...]:
    from evalrun.secrets import FRAGMENT

    if values not in _OLD_PIECES:  # the former lru_cache
        _OLD_PIECES[values] = tuple({s if len(s) <= FRAGMENT else s[i : i + FRAGMENT]
                                     for s in values for i in range(max(1, len(s) - FRAGMENT + 1))})
    return _OLD_PIECES[values]


def use_old_scrub() -> None:
    """Put the former ``scrub`` in every module of the record path that calls it."""
    import evalrun.secrets
    from evalrun.models.replay import fixtures, matching, proxy, recorder

    for module in (evalrun.secrets, fixtures, matching, proxy, recorder):
        module.scrub = old_scrub  # type: ignore[attr-defined]


# -- helper processes ----------------------------------------------------------------------------------------

class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

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


def _serve_upstream() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    sys.stdin.read()


def _serve_proxy(which: str, upstream: str, fixtures: Path) -> None:
    if which == "old":
        use_old_scrub()
    from evalrun.models.replay.proxy import ReplayProxy
    from evalrun.secrets import known_secrets

    proxy = ReplayProxy("record", upstream=upstream, key_env=KEYS, redact_values=set(known_secrets(KEYS).keys))
    proxy.start()
    print(proxy.register_eval("bench", fixtures), flush=True)
    ready = time.process_time()
    sys.stdin.readline()  # the client's calls are done
    proxy.stop()  # the fixtures are on disk
    print(f"{time.process_time() - ready:.6f}", flush=True)


class _Helper:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.line = self.process.stdout.readline().strip()
        if not self.line:
            raise RuntimeError(f"helper {args} did not start")

    def finish(self) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("done\n")
        self.process.stdin.close()
        answer = self.process.stdout.readline().strip()
        self.process.wait(timeout=120)
        return answer


# -- measuring ------------------------------------------------------------------------------------------------

def _calls(base: str, count: int) -> None:
    host, _, rest = base.removeprefix("http://").partition("/")
    conn = http.client.HTTPConnection(host, timeout=60)
    for number in range(count):
        body = json.dumps({"model": "gpt-4o-mini", "stream": number % 2 == 1,
                           "messages": [{"role": "user", "content": f"{number}: {PROMPT}"}]}).encode()
        conn.request("POST", f"/{rest}/v1/chat/completions", body=body,
                     headers={"Content-Type": "application/json", "Authorization": "Bearer evalrun-placeholder-not-a-key"})
        response = conn.getresponse()
        response.read()
        assert response.status == 200, response.status
    conn.close()


def proxy_round(which: str, upstream: str, calls: int) -> tuple[float, float]:
    """(CPU seconds of the record proxy, MB of fixtures it wrote) for ``calls`` calls."""
    with tempfile.TemporaryDirectory(prefix="bench-secrets-") as scratch:
        helper = _Helper("--serve-proxy", which, upstream, scratch)
        _calls(helper.line, calls)
        cpu = float(helper.finish())
        files = list(Path(scratch).rglob("*.json"))
        assert len(files) == calls, (len(files), calls)
        return cpu, sum(f.stat().st_size for f in files) / 2**20


def redact_round(which: str, fixtures: list[Any]) -> float:
    """CPU seconds of ``fixtures.redact`` over the given fixture documents."""
    from evalrun.models.replay import fixtures as module

    secrets = {OPENAI_KEY, ANTHROPIC_KEY, "0123456789abcdef0123456789abcdef"}
    saved = module.scrub
    module.scrub = old_scrub if which == "old" else saved  # type: ignore[assignment]
    try:
        start = time.process_time()
        for document in fixtures:
            module.redact(document, secrets)
        return time.process_time() - start
    finally:
        module.scrub = saved


def run(calls: int, rounds: int) -> dict[str, Any]:
    upstream = _Helper("--serve-upstream")
    per_mb: dict[str, dict[str, list[float]]] = {"proxy": {"old": [], "new": []}, "redact": {"old": [], "new": []}}
    try:
        documents: list[Any] = []
        megabytes = 0.0
        for number in range(rounds):
            for which in (("old", "new") if number % 2 == 0 else ("new", "old")):
                cpu, mb = proxy_round(which, upstream.line, calls)
                per_mb["proxy"][which].append(cpu / mb)
        with tempfile.TemporaryDirectory(prefix="bench-secrets-") as scratch:  # the documents redact is timed on
            helper = _Helper("--serve-proxy", "new", upstream.line, scratch)
            _calls(helper.line, calls)
            helper.finish()
            for file in Path(scratch).rglob("*.json"):
                megabytes += file.stat().st_size / 2**20
                documents.append(json.loads(file.read_text()))
        for number in range(rounds):
            for which in (("old", "new") if number % 2 == 0 else ("new", "old")):
                per_mb["redact"][which].append(redact_round(which, documents) / megabytes)
    finally:
        upstream.finish()
    figures = {
        name: {which: round(statistics.median(values) * 1000, 1) for which, values in by.items()}
        for name, by in per_mb.items()
    }
    for by in figures.values():
        by["ratio"] = round(by["new"] / by["old"], 3)
    return {"calls": calls, "rounds": rounds, "cpu_ms_per_recorded_mb": figures}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve-upstream"]:
        _serve_upstream()
        return 0
    if argv[:1] == ["--serve-proxy"]:
        _serve_proxy(argv[1], argv[2], Path(argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="calls per round (half plain, half streamed)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    results = run(args.calls, args.rounds)
    print(f"{'CPU ms per recorded MB':<26}{'old scrub':>10}{'new scrub':>11}{'new/old':>9}")
    for name, by in results["cpu_ms_per_recorded_mb"].items():
        print(f"{name:<26}{by['old']:>10}{by['new']:>11}{by['ratio']:>9}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
