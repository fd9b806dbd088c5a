"""Run evalrun as it would run on macOS or Windows, on this Linux machine.

``simulated_env("macos", env)`` returns ``env`` with ``tests/harness/simulated``
in front of ``PYTHONPATH`` and ``SIMULATED_PLATFORM`` set: every Python process
started with it (evalrun, and everything evalrun starts, which inherits both)
runs that folder's ``sitecustomize``, which makes ``sys.platform`` "darwin",
hides ``/proc``, and removes pidfd, ``unshare``, ``setns`` and ``prctl``
(``"windows"``: ``import fcntl`` fails). The simulation needs a fresh
interpreter: the warm zygote of ``Project.run`` has imported everything already.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SIMULATED = Path(__file__).resolve().parent / "simulated"
PLATFORMS = ("macos", "windows")


def simulated_env(platform: str, env: dict[str, str]) -> dict[str, str]:
    assert platform in PLATFORMS, platform
    path = os.pathsep.join(p for p in (str(SIMULATED), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "SIMULATED_PLATFORM": platform}


def simulated_evalrun(platform: str, cwd: Path, *args: str, env: dict[str, str],
                      timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m evalrun ARGS`` in ``cwd``, fresh, under the simulated ``platform``."""
    return subprocess.run([sys.executable, "-m", "evalrun", *args], cwd=cwd, env=simulated_env(platform, env),
                          capture_output=True, text=True, timeout=timeout)
