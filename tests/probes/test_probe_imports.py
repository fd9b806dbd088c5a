"""A probe's timeout is the probe's: importing its checker's library (httpx) is not counted in it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

# An httpx that takes 1.5 s to import (as on a loaded machine), then is the real one.
SLOW_HTTPX = """
import importlib, sys, time
time.sleep(1.5)
sys.path.remove(__file__.rsplit("/", 1)[0])
del sys.modules["httpx"]
sys.modules["httpx"] = importlib.import_module("httpx")
"""

CHECK = """
import socket
from pathlib import Path
from evalrun.probes.run import check_probe
from evalrun.probes.spec import Probe
with socket.socket() as listener:  # accepts, never answers
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    result = check_probe(Probe("api", "api", "http", f"http://127.0.0.1:{port}/health", timeout=0.5), {}, Path("."))
    print(result.reason.replace(str(port), "PORT"))
"""


def test_a_slow_import_of_httpx_does_not_eat_an_http_probes_timeout(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "httpx.py").write_text(textwrap.dedent(SLOW_HTTPX))
    done = subprocess.run([sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PYTHONPATH": str(shim), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    # The probe waited its own 0.5 s for an answer: with the import inside its deadline, the
    # watchdog gave up on the thread first and the reason lost the probe's URL.
    assert done.stdout.strip() == "http api: no answer after 0.5 s (http://127.0.0.1:PORT/health)", done.stdout
