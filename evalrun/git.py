"""The one way evalrun runs git: through ``evalrun.process.spawn``, under a deadline, every failure one line.

Used by the selection (``--changed-since``, clean copies), the bites, the
history (the commit a run was made at) and ``evalrun check``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from evalrun.errors import UsageError
from evalrun.process import spawn, terminate_group

GIT_TIMEOUT = 120.0  # seconds; git archive of a large repository can take a while


def run_git(cwd: Path, args: list[str], flag: str, stdout: int | None = None,
            env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``git args`` in ``cwd`` (``env``: variables set over evalrun's own); raise UsageError naming ``flag``
    when git is absent or fails."""
    if shutil.which("git") is None:
        raise UsageError(f"{flag}: git is not on PATH; install git or run without {flag}")
    # quotepath=off: non-ASCII names come back as they are, not octal-escaped.
    argv = ["git", "-c", "core.quotepath=off", *args]
    extra = dict(env or {})
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    env.update(extra)
    env["LC_ALL"] = "C"
    try:
        proc = spawn(argv, cwd, env, stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise UsageError(f"{flag}: cannot run git in {cwd} ({exc.strerror}); check that the folder exists") from None
    try:
        out, err = proc.communicate(timeout=GIT_TIMEOUT)  # git's -z output is read whole
    except subprocess.TimeoutExpired:
        terminate_group(proc.pid, 1.0, leader=proc)
        proc.communicate()
        raise UsageError(f"{flag}: git {args[0]} took over {GIT_TIMEOUT:g} s in {cwd}; check the repository") from None
    except BaseException:  # Ctrl-C: git goes too
        terminate_group(proc.pid, 1.0, leader=proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def git_says(proc: subprocess.CompletedProcess[bytes]) -> str:
    """Git's own first line of complaint, for the end of a message."""
    lines = [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[0] if lines else f"git exited {proc.returncode}"


def split_z(raw: bytes) -> list[str]:
    """The names of git's ``-z`` output; undecodable bytes survive as surrogates, so a path round-trips."""
    return [part for part in raw.decode("utf-8", "surrogateescape").split("\0") if part]
