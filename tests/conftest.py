"""Shared fixtures: a project builder that runs the real ``evalrun`` entry point.

``project({"manifest.toml": ..., "evals/a/score.py": ...}).run("t1")`` writes
the files under a temporary folder and runs ``python -m evalrun`` there as a
real subprocess, returning the exit code and the output (tox's
``tox_project`` fixture is the model).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


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
        proc = subprocess.run(
            [sys.executable, "-m", "evalrun", *args],
            cwd=self.root,
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return RunOutcome(proc.returncode, proc.stdout, proc.stderr)

    def results(self, tier: str = "t1") -> dict[str, Any]:
        return json.loads((self.root / ".evalrun" / "results" / f"{tier}.json").read_text())

    def eval_result(self, name: str, tier: str = "t1") -> dict[str, Any]:
        return next(e for e in self.results(tier)["evals"] if e["name"] == name)


@pytest.fixture
def project(tmp_path: Path):
    def make(files: dict[str, str | bytes] | None = None) -> Project:
        return Project(tmp_path).write(files or {})

    return make


def json_scorer(checks: list[dict[str, Any]], metrics: dict[str, Any] | None = None, exit_code: int = 0) -> str:
    """A tiny Python scorer that writes the given report and exits."""
    report = {"checks": checks, "metrics": metrics or {}}
    return (
        "import json, os, sys\n"
        f"json.dump({report!r}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
        f"sys.exit({exit_code})\n"
    )


def eval_entry(name: str, run: str = '["python", "score.py"]', tier: str = "t1", extra: str = "") -> str:
    return f'[[evals]]\nname = "{name}"\ntier = "{tier}"\ndir = "evals/{name}"\nrun = {run}\n{extra}\n'


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory):
    """One embedded PostgreSQL cluster for the whole session, started and stopped by evalrun's own ServiceManager."""
    from evalrun.services.manager import ServiceManager, ServiceSpec

    def no_ready_check(requirement: str, env: Any) -> tuple[bool, str]:
        return False, "embedded postgres has its own readiness check"

    root = tmp_path_factory.mktemp("session-postgres")
    spec = ServiceSpec("db", None, "embedded", None, 90.0, {}, root)
    with ServiceManager({"db": spec}, root / "logs", root / "state", dict(os.environ), no_ready_check) as services:
        state = services.start("db")
        assert state.ok, state.failure
        yield services.env_for(["db"])["DATABASE_URL"]


@pytest.fixture
def postgres_database(postgres_url: str) -> str:
    """A fresh, empty database in the session cluster for one test; its URL."""
    import uuid

    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgres"])
def history_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of a CLI run whose history is the default SQLite file, then a fresh embedded PostgreSQL."""
    if request.param == "sqlite":
        return {}
    return {"EVALRUN_HISTORY_URL": request.getfixturevalue("postgres_database")}
