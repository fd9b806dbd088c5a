"""The repository's own bites: on a fresh clone, `evalrun bites t2` catches every declared breakage under replay.

The RLS eval must go red on the leaky policies (``leaky_schema.sql``) and on a
schema without FORCE ROW LEVEL SECURITY; the agent eval on a tool dispatch that
finds no tool (the replayed conversation then no longer matches). No key, no
network: t2 replays the committed fixtures against the embedded PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from harness import REPO, warm_evalrun

pytestmark = pytest.mark.xdist_group("postgres")

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def _fresh_clone(tmp_path: Path) -> Path:
    """HEAD of this repository as a new repository of one commit: what a fresh clone checks out."""
    archive = tmp_path / "head.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=REPO, stdout=fh, check=True)
    clone = tmp_path / "clone"
    clone.mkdir()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(clone)], check=True)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fresh clone"]):
        subprocess.run(["git", *args], cwd=clone, env=env, check=True, capture_output=True)
    return clone


def test_own_bites_t2_are_all_caught_on_a_fresh_clone(tmp_path: Path) -> None:
    clone = _fresh_clone(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "OPENAI_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    proc = warm_evalrun(clone, "bites", "t2", "-j", "2", env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((clone / ".evalrun/results/bites-t2.json").read_text())
    outcomes = {e["name"]: e["metrics"]["outcome"] for e in results["evals"]}
    assert outcomes == {
        "rls-isolation: bite leaky-policies": "caught",
        "rls-isolation: bite owner-bypasses": "caught",
        "agent-tools[mini]: bite tool-not-found": "caught",
        "agent-tools[nano]: bite tool-not-found": "caught",
    }
    assert subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=clone,
                          capture_output=True, text=True).stdout == ""
