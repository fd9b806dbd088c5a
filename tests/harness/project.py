"""The project builder: write a manifest and scorers under a folder, run the real ``evalrun`` there.

``Project(root).write({"manifest.toml": ..., "evals/a/score.py": ...}).run("t1")``
runs ``python -m evalrun t1`` in ``root`` in a process of its own and returns
the exit code and the output (tox's ``tox_project`` fixture is the model; the
``project`` fixture in ``harness.plugin`` makes one under ``tmp_path``). The
process is forked from a warm one that imported evalrun once per worker
(``evals/lib/evalrun_forks.py``, which sets each child up as ``python -m
evalrun`` would be; tests/cli/test_evalrun_forks.py holds it to a fresh
process's output): hundreds of runs would otherwise spend most of the suite's
CPU importing typer and pydantic. ``warm_evalrun(cwd, *args, env=...)`` is the
same fork for a folder that is no ``Project`` or an environment built whole.
Tests that need what a fork does not give start evalrun themselves, fresh, and
say why: a terminal or a pipe of their own as its output, a signal or a kill
sent mid-run, its output read while it runs, another interpreter or user, or
what importing evalrun does or costs.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun_forks import Zygote  # evals/lib, on the path by pyproject.toml's [tool.pytest.ini_options] pythonpath

from harness.leaks import SESSION_ROOTS
from harness.manifest_builder import an_eval, manifest


@dataclass
class RunOutcome:
    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, files: dict[str, str | bytes]) -> "Project":
        for rel, content in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
            if rel.endswith(".sh"):
                path.chmod(0o755)
        return self

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """This process's environment without the outer run's evalrun, CI and colour settings."""
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_"))}
        full_env.pop("CI", None)
        full_env.pop("NO_COLOR", None)
        full_env.update(extra or {})
        return full_env

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> RunOutcome:
        """``python -m evalrun ARGS`` here, as ``subprocess.run(..., capture_output=True, text=True, timeout=timeout)``."""
        return RunOutcome(*_forked_run(args, self.root, self.env(env), timeout))

    def results(self, tier: str = "t1") -> dict[str, Any]:
        return json.loads((self.root / ".evalrun" / "results" / f"{tier}.json").read_text())

    def eval_result(self, name: str, tier: str = "t1") -> dict[str, Any]:
        return next(e for e in self.results(tier)["evals"] if e["name"] == name)


def warm_evalrun(cwd: Path, *args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``subprocess.run([sys.executable, "-m", "evalrun", *args], cwd=cwd, env=env, capture_output=True,
    text=True, timeout=timeout)``, forked from the warm zygote as ``Project.run`` is.

    For a test that runs evalrun in a folder that is no ``Project`` (the checkout, a clone, an export) or
    with exactly the environment it built (``Project.run`` takes this one and drops the outer run's
    ``EVALRUN_*``, ``GITHUB_*``, ``CI`` and ``NO_COLOR``).
    """
    code, out, err = _forked_run(args, cwd, env, timeout)
    return subprocess.CompletedProcess([sys.executable, "-m", "evalrun", *args], code, out, err)


def _forked_run(args: tuple[str, ...], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``python -m evalrun ARGS`` in ``cwd``, forked from this worker's zygote."""
    with tempfile.TemporaryDirectory(prefix="evalrun-run-") as scratch:
        out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
        code = evalrun_zygote().run(args, cwd, env, out, err, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(["python", "-m", "evalrun", *args], timeout)
        return code, _as_text(out), _as_text(err)


def _as_text(path: Path) -> str:
    """A captured stream decoded as ``text=True`` decodes it (the locale's encoding, newlines made ``\\n``)."""
    return io.TextIOWrapper(io.BytesIO(path.read_bytes())).read()


_ZYGOTE: list[Zygote] = []  # this worker's, started by its first Project.run, stopped when the session ends
_ZYGOTE_LOCK = threading.Lock()


def evalrun_zygote() -> Zygote:
    with _ZYGOTE_LOCK:
        if not _ZYGOTE:
            zygote = Zygote(dict(os.environ))
            SESSION_ROOTS.add(zygote.pid)  # its runs are waited for; what they leave behind is a leak
            _ZYGOTE.append(zygote)
        return _ZYGOTE[0]


def close_zygote() -> None:
    """Stop this worker's zygote, if it started one (it waits for its runs)."""
    with _ZYGOTE_LOCK:
        for zygote in _ZYGOTE:
            zygote.close()
            SESSION_ROOTS.discard(zygote.pid)
        _ZYGOTE.clear()


def json_scorer(checks: list[dict[str, Any]], metrics: dict[str, Any] | None = None, exit_code: int = 0) -> str:
    """A tiny Python scorer that writes the given report and exits."""
    report = {"checks": checks, "metrics": metrics or {}}
    return (
        "import json, os, sys\n"
        f"json.dump({report!r}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
        f"sys.exit({exit_code})\n"
    )


def eval_entry(name: str, run: str = '["python", "score.py"]', tier: str = "t1", extra: str = "") -> str:
    """One ``[[evals]]`` block as text: ``run`` is TOML (an array), ``extra`` raw TOML lines appended to it.

    New tests build manifests with :func:`harness.manifest_builder.manifest` and ``an_eval`` instead.
    """
    argv = tomllib.loads(f"run = {run}")["run"]
    return manifest(an_eval(name, argv, tier=tier)).text + f"{extra}\n"
