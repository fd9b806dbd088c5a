"""The repository's own agent eval (evals/agent) in a project of its own: ``triage`` under two experiments."""

from __future__ import annotations

import shutil
from pathlib import Path

from harness.manifest_builder import an_eval, manifest
from harness.paths import REPO
from harness.project import Project

AGENT_MANIFEST = manifest(
    an_eval("triage", tier="t2", dir="evals/agent", model=True, timeout=60, tags=["agent"]),
    tiers={"t1": {}, "t2": {}},
    models={"judge": "gpt-4o-mini", "prices": {"gpt-4o-mini": {"input": 0.15, "output": 0.60},
                                               "gpt-4.1-nano": {"input": 0.10, "output": 0.40}}},
    experiments={"mini": {"env": {"AGENT_MODEL": "gpt-4o-mini"}, "tags": ["agent"]},
                 "nano": {"env": {"AGENT_MODEL": "gpt-4.1-nano"}, "tags": ["agent"]}},
).text

ENV = {"OPENAI_API_KEY": "", "PYTHONDONTWRITEBYTECODE": "1"}


def agent_project(root: Path, remove: tuple[str, ...] = ()) -> Project:
    """The own agent eval as ``triage`` under mini and nano; ``remove``: fixture files (under fixtures/) deleted."""
    shutil.copytree(REPO / "evals" / "agent", root / "evals" / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    for rel in remove:
        (root / "evals" / "agent" / "fixtures" / rel).unlink()
    return Project(root).write({"manifest.toml": AGENT_MANIFEST})
