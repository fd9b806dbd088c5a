"""Finding the real eval tools for the tests, and keeping them offline.

Inspect AI is a pip package (``.ci/run`` installs it into the test venv);
promptfoo and js-tiktoken are npm packages in the shared folder named by
``EVALRUN_NPM_TOOLS`` (``.ci/run``: ``npm install --prefix "$EVALRUN_NPM_TOOLS"
promptfoo js-tiktoken``). A test that needs an absent tool skips, saying which
and how to install it; under CI it fails instead.

No test reaches the network: each tool runs in a new network namespace
(``unshare -rn``: only a loopback, down) where the machine allows it, so a
connection attempt fails the test instead of passing unseen; and each is told
not to try: promptfoo's telemetry and update check are off, and Inspect's
tokenizer (tiktoken's ``o200k_base``, which it downloads on first use) is
built here from the ranks the npm package js-tiktoken ships, byte for byte
the file tiktoken would download (its SHA-256 is checked, as tiktoken does).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# tiktoken's o200k_base: where it downloads it from (the cache key is this URL's SHA-1) and its SHA-256.
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_SELF_HOSTED": "1",
}


def missing(what: str, how: str) -> None:
    """Skip loudly (fail under CI, where ``.ci/run`` installs it)."""
    message = f"{what} is not installed ({how}); the real-tool tests need it"
    if os.environ.get("CI"):
        pytest.fail(message + "; .ci/run installs it")
    pytest.skip(message)


def npm_package(name: str) -> Path:
    folder = os.environ.get("EVALRUN_NPM_TOOLS")
    how = f"npm install --prefix DIR {name}; EVALRUN_NPM_TOOLS=DIR"
    if not folder or shutil.which("node") is None:
        missing(f"the npm package {name} (and node)", how)
    package = Path(folder) / "node_modules" / name
    if not (package / "package.json").is_file():
        missing(f"the npm package {name}", how)
    return package


def promptfoo_bin() -> Path:
    program = npm_package("promptfoo").parent / ".bin" / "promptfoo"
    if not program.exists():
        missing("promptfoo's command", "npm install --prefix DIR promptfoo")
    return program


def inspect_bin() -> Path:
    program = Path(sys.executable).parent / "inspect"
    if not program.exists():
        missing("inspect-ai", "pip install inspect-ai into the test venv")
    return program


@functools.lru_cache(maxsize=1)
def offline_prefix() -> tuple[str, ...]:
    """``("unshare", "-rn")`` where a process can be put in a network namespace of its own, else nothing."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    try:
        ok = subprocess.run([unshare, "-rn", "true"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return (unshare, "-rn") if ok else ()


def tiktoken_cache(folder: Path) -> Path:
    """A TIKTOKEN_CACHE_DIR holding o200k_base, built from js-tiktoken's ranks (no download)."""
    ranks_js = npm_package("js-tiktoken") / "dist" / "ranks" / "o200k_base.js"
    source = ranks_js.read_text(encoding="utf-8").strip()
    data = json.loads(source.removeprefix("export default").strip().rstrip(";"))
    ranks: dict[str, int] = {}
    for line in data["bpe_ranks"].split("\n"):
        if line:
            _, offset, *tokens = line.split(" ")
            for i, token in enumerate(tokens):
                ranks[token] = int(offset) + i
    body = "".join(f"{token} {rank}\n" for token, rank in sorted(ranks.items(), key=lambda kv: kv[1])).encode()
    assert hashlib.sha256(body).hexdigest() == O200K_SHA256, "js-tiktoken's o200k_base ranks differ from tiktoken's"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(body)
    return folder
