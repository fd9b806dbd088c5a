"""``evalrun init [FOLDER]``: a starting project that is green on the first ``evalrun t1``.

It writes a commented manifest, one t1 eval that uses the scorer SDK, an empty
``baselines/`` and a ``.gitignore`` line for ``.evalrun/``, and refuses to
overwrite anything: every file is checked before the first one is written.
With ``--model`` it also writes a t2/t3 pair sharing one set of fixtures
(``fixtures_for``), a ``[models]`` table, a t3 ``require`` on the key, a scorer
that calls the model through the official openai SDK, and a fake upstream to
try ``t3 --record`` without a key. In a folder with a ``package.json`` (and
without ``--model``) it writes a Node start instead (``init_node``): a
JavaScript scorer, the project's vitest or jest as an eval with evalrun's
assertion counts, and a workflow that sets up Node.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalrun.atomic import write_atomic
from evalrun.commands.init_node import TIER_TABLES, node_files, node_manifest, node_project
from evalrun.reports_out.command_lines import gitignore_line, init_next_lines, init_wrote, node_next_lines
from evalrun.session import Session
from evalrun.errors import UsageError, file_label
from evalrun.workspace import PROJECT_GITIGNORE_LINE

MANIFEST = '''\
# evalrun manifest: which evals run in which tier. Reference: the evalrun README.
# A tier is a promise about what its evals need, so CI can run each where it fits.

# Folders (relative to this file) put on PYTHONPATH for every scorer: a scorer anywhere
# under evals/ imports your project's modules (from yourpackage import x) with no sys.path
# edits. Add "src" if your package lives under src/.
pythonpath = ["."]

''' + TIER_TABLES + '''\
{t3_extra}
[baseline]
dir = "baselines"               # evalrun baseline --update t1 writes baselines/t1.toml

# [history]                     # every run is kept in .evalrun/history.sqlite by default
# url = "${{EVALRUN_HISTORY_URL}}"  # or a team's PostgreSQL: postgresql://user:password@host/db
{models}
[[evals]]
name = "example"
tier = "t1"
dir = "evals/example"
run = ["python", "score.py"]    # any program; it writes its report to $EVALRUN_REPORT
timeout = 60
{model_evals}'''

T3_PLAIN = '''\
# budget = {{ calls = 200, tokens = 500000 }}   # stop live calls past this
# require = ["env:OPENAI_API_KEY"]            # refuse the whole tier when unmet
'''

T3_MODEL = '''\
require = ["env:OPENAI_API_KEY"]  # t3 calls the model: without a key the tier is refused (exit 2)
budget = {{ calls = 50 }}           # evalrun's proxy refuses live calls past this
'''

MODELS = '''
[models]
# t2 replays recorded answers and never sees a key; t3 sends calls to the provider's API
# (https://api.openai.com for the openai SDK), and t3 --record writes each answer as a
# fixture that t2 replays. To send t3's calls elsewhere, give a base URL, with or without
# /v1 (both mean the same: an SDK's /v1/chat/completions is not doubled):
# upstream = "http://127.0.0.1:8765/v1"
# EVALRUN_UPSTREAM=URL overrides it for one run (the fake model: python evals/fake_upstream.py).

[models.prices]                 # USD per million tokens, for the cost line; never looked up
"gpt-4o-mini" = {{ input = 0.15, output = 0.60 }}
'''

MODEL_EVALS = '''
# One scorer, two tiers sharing one set of fixtures: evalrun t3 --record writes
# evals/answer/fixtures/answer/0001.json, ...; evalrun t2 replays them (commit them).
[[evals]]
name = "answer"
tier = "t2"
dir = "evals/answer"
run = ["python", "score.py"]
model = true                    # its calls go through evalrun's proxy (OPENAI_BASE_URL points at it)
requires = ["python:openai"]    # skipped loudly, with the reason, where the SDK is not installed
timeout = 60

[[evals]]
name = "answer-live"
tier = "t3"
dir = "evals/answer"
run = ["python", "score.py"]
model = true
fixtures_for = "answer"         # records (with t3 --record) the fixtures the t2 eval replays
requires = ["python:openai"]
timeout = 120
'''

SCORER = '''\
"""An example scorer: each check counts its assertions; evalrun gates on names and counts."""

from evalrun import scorer


def slugify(title: str) -> str:  # the code under test; replace it with yours
    return "-".join(title.lower().split())


with scorer.check("slugify joins words with hyphens") as c:
    c.equal(slugify("Hello World"), "hello-world")
    c.equal(slugify("  many   spaces "), "many-spaces")

with scorer.check("slugify lowercases") as c:
    c.equal(slugify("ABC"), "abc")

scorer.metric("examples", 3)
'''

MODEL_SCORER = '''\
"""A model eval: this scorer runs in t2 (recorded answers replayed) and t3 (live calls).

evalrun points the official openai SDK at its proxy (OPENAI_BASE_URL) and, in t2,
gives it a placeholder key: OpenAI() needs no arguments. Replace ask() with a call
into your own code (pythonpath in manifest.toml lets this file import it).
"""

import os

from openai import OpenAI

from evalrun import scorer

MODEL = os.getenv("EVALRUN_MODEL", "gpt-4o-mini")  # an experiment may set another model
client = OpenAI()  # reads OPENAI_BASE_URL and OPENAI_API_KEY, which evalrun sets


def ask(question: str) -> str:  # the code under test; call your product here instead
    reply = client.chat.completions.create(
        model=MODEL, temperature=0, messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content or ""


with scorer.check("answers with the word it was asked for") as c:
    answer = ask("Reply with exactly one word, lowercase, no punctuation: pong")
    c.evidence(f"answer: {answer!r}")
    c.contains(answer.strip().lower(), "pong")
'''

FAKE_UPSTREAM = '''\
"""A fake OpenAI-style model on 127.0.0.1, to try evalrun t3 --record without a key.

    python evals/fake_upstream.py                 # serves http://127.0.0.1:8765/v1 (--port N)
    # in another shell:
    OPENAI_API_KEY=sk-fake EVALRUN_UPSTREAM=http://127.0.0.1:8765/v1 evalrun t3 --record
    # stop it (Ctrl-C), then replay what was recorded, with no model and no key:
    evalrun t2

It answers POST /v1/chat/completions with the text after the last ':' of the last
message, as a model told "Reply with ...: pong" would. Standard library only.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path.split("?", 1)[0] != "/v1/chat/completions":
            message = f"fake upstream: no route {self.path}; it answers POST /v1/chat/completions"
            return self._send(404, {"error": {"message": message, "type": "not_found"}})
        messages = body.get("messages") or [{}]
        content = str(messages[-1].get("content", ""))
        text = content.rsplit(":", 1)[-1].strip()
        usage = {"prompt_tokens": len(content.split()), "completion_tokens": len(text.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        self._send(200, {
            "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": usage,
        })

    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        print(f"fake upstream: {self.command} {self.path} -> {args[1] if len(args) > 1 else ''}", flush=True)


def main() -> None:
    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 8765
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"fake upstream: http://127.0.0.1:{server.server_address[1]}/v1 (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
'''

GITIGNORE_LINE = PROJECT_GITIGNORE_LINE
UNIT_OUT_LINE = "evals/unit/out/"  # the Node unit eval's JUnit report: written by every run, never committed


@dataclass(frozen=True)
class InitRequest:
    """``evalrun init [FOLDER] [--model]``: where to start the project, and whether with a model eval."""

    folder: Path
    model: bool = False


def init_project(request: InitRequest, session: Session) -> int:
    folder, model = request.folder, request.model
    console = session.console
    node = node_project(folder) if not model else None  # --model writes the Python openai pair (below)
    manifest = MANIFEST.format(
        t3_extra=(T3_MODEL if model else T3_PLAIN).format(),
        models=MODELS.format() if model else "",
        model_evals=MODEL_EVALS if model else "",
    )
    files = {
        folder / "manifest.toml": manifest,
        folder / "evals" / "example" / "score.py": SCORER,
        folder / "baselines" / ".gitkeep": "",
    }
    folders = [folder / "evals" / "example", folder / "baselines"]
    if node is not None:  # a package.json: a Node scorer, the project's test runner, a workflow with Node
        del files[folder / "evals" / "example" / "score.py"]
        files[folder / "manifest.toml"] = node_manifest(node)
        files.update(node_files(folder, node))
        if node.runner:
            folders.append(folder / "evals" / "unit")
    if model:
        files[folder / "evals" / "answer" / "score.py"] = MODEL_SCORER
        files[folder / "evals" / "fake_upstream.py"] = FAKE_UPSTREAM
        folders.append(folder / "evals" / "answer")
    existing = [p for p in [*files, *folders] if p.exists()]
    if existing:
        raise UsageError(f"init: {file_label(existing[0])} already exists; evalrun init overwrites nothing, "
                         f"run it in an empty folder")
    gitignore = folder / ".gitignore"
    current = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    ignored = [GITIGNORE_LINE, *([UNIT_OUT_LINE] if node is not None and node.runner else [])]
    for path, text in files.items():
        write_atomic(path, text)
        path.chmod(0o644)  # files to commit, not private temp files
        console.line(init_wrote(path))
    missing = [line for line in ignored if line not in current.splitlines()]
    if missing:
        joiner = "" if not current or current.endswith("\n") else "\n"
        write_atomic(gitignore, current + joiner + "".join(f"{line}\n" for line in missing))
        gitignore.chmod(0o644)
        console.line(gitignore_line(gitignore, missing, existed=bool(current)))
    for text in node_next_lines(node.runner) if node is not None else init_next_lines(model):
        console.line(text)
    return 0

