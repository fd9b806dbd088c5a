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

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from harness.project import RunOutcome

SIMULATED = Path(__file__).resolve().parent / "simulated"
PLATFORMS = ("macos", "windows")


def simulated_env(platform: str, env: dict[str, str]) -> dict[str, str]:
    assert platform in PLATFORMS, platform
    path = os.pathsep.join(p for p in (str(SIMULATED), env.get("PYTHONPATH", "")) if p)
    return {**env, "PYTHONPATH": path, "SIMULATED_PLATFORM": platform}


def simulated_evalrun(platform: str, cwd: Path, *args: str, env: dict[str, str], timeout: float = 300) -> RunOutcome:
    """``python -m evalrun ARGS`` in ``cwd``, fresh, under the simulated ``platform``: code, stdout, stderr."""
    proc = subprocess.run([sys.executable, "-m", "evalrun", *args], cwd=cwd, env=simulated_env(platform, env),
                          capture_output=True, text=True, timeout=timeout)
    return RunOutcome(proc.returncode, proc.stdout, proc.stderr)


REAP = ("import json, sys; from evalrun.leftovers import reap_leftovers; "
        "from evalrun.reports_out.run_notes import leftover_line; "
        "print(json.dumps([leftover_line(x) for x in reap_leftovers(sys.argv[1])]))")


def simulated_reap(platform: str, state_dir: Path) -> list[str]:
    """``evalrun.leftovers.reap_leftovers(state_dir)`` in a fresh process of the simulated ``platform``, each
    leftover as the run's line."""
    proc = subprocess.run([sys.executable, "-c", REAP, str(state_dir)], env=simulated_env(platform, dict(os.environ)),
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout)


@contextmanager
def users_own_tmpdir() -> Iterator[Path]:
    """A temporary folder of the user's own for a simulated Mac's ``TMPDIR`` (macOS gives each user one under
    /var/folders), removed afterwards. In /tmp, sticky and searchable by all, as /tmp is: as root the embedded
    PostgreSQL runs as another user, who must reach its cluster there (pytest's tmp_path is mode 700).

    Why not the shared /tmp: a run made without /proc names its scratch folders with start time 0, which an
    older evalrun reading /proc on the same machine (another checkout's tests) took for a dead run's and removed.
    """
    folder = Path(tempfile.mkdtemp(prefix="simulated-tmpdir-"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
