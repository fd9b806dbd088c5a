"""evalrun's pre-commit hooks (``.pre-commit-hooks.yaml``), run by pre-commit itself (``pre-commit try-repo``).

try-repo clones this repository (with its uncommitted changes) as a user's ``repos:`` entry would fetch
it and runs the hook in a project of its own: a git repository in a temp folder. The hooks are
``language: system``, so they run this venv's evalrun, as a project's own environment would.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from harness import REPO, eval_entry, json_scorer
from harness.git import GIT_ENV, git, write


def _project(root: Path) -> dict[str, str]:
    write(root, {
        "manifest.toml": "[tiers.t1]\n" + eval_entry("a") + eval_entry("b"),
        "evals/a/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": True}]),
        "evals/b/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": True}]),
    })
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "PRE_COMMIT"))}
    env.update(GIT_ENV, PRE_COMMIT_HOME=str(root.parent / "pre-commit-home"), NO_COLOR="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "evals")):
        git(root, *args)
    return env


def _try_repo(root: Path, env: dict[str, str], hook: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).parent / "pre-commit"), "try-repo", str(REPO), hook,
                           "--all-files"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_t1_hook_passes_a_green_project_and_fails_a_broken_check(tmp_path: Path) -> None:
    root = tmp_path / "project"
    env = _project(root)
    green = _try_repo(root, env, "evalrun-t1")
    assert green.returncode == 0, green.stdout + green.stderr
    assert "evalrun t1" in green.stdout and "Passed" in green.stdout

    (root / "evals" / "b" / "score.py").write_text(json_scorer([{"name": "fine", "assertions": 1, "passed": False}]))
    changed = _try_repo(root, env, "evalrun-t1-changed")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "evalrun t1: failed (exit 1)" in changed.stdout
    assert "not compared: a: left out by this run's filters (--changed-since HEAD)" in changed.stdout  # only b ran
