"""Projects whose evals run the stub scorers of tests/scorers/, alone or committed to a git repository."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from harness.git import git
from harness.manifest_builder import Manifest, an_eval, manifest
from harness.paths import REPO, SCORERS
from harness.project import Project, eval_entry

# The bite the guard projects lay on their product (tests/cli/test_bites.py, tests/test_bites_apply.py): "safe" leaks.
GUARD_PATCH = """\
diff --git a/evals/guard/product.txt b/evals/guard/product.txt
--- a/evals/guard/product.txt
+++ b/evals/guard/product.txt
@@ -1 +1 @@
-safe
+leaky
"""


def stub_project(
    project, evals: dict[str, str | tuple[str, str]], extra: dict[str, str] | None = None, tiers: str = ""
) -> Project:
    """A project whose evals each run one stub scorer from tests/scorers/."""
    entries = [tiers]
    for name, stub in evals.items():
        more = ""
        if isinstance(stub, tuple):
            stub, more = stub
        entries.append(eval_entry(name, run=f'["python", "{stub}"]', extra=more))
    proj = project({"manifest.toml": "\n".join(entries), **(extra or {})})
    for name, stub in evals.items():
        stub = stub[0] if isinstance(stub, tuple) else stub
        folder = proj.root / "evals" / name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(SCORERS / "_report.py", folder)
        if (SCORERS / stub).exists():
            shutil.copy(SCORERS / stub, folder)
    return proj


FLAKY = (REPO / "evals" / "gate-bites" / "cases" / "repeats" / "flaky.py").read_text()


def flaky_coin(tier_keys: Mapping[str, Any] | None = None, **keys: Any) -> Manifest:
    """Eval "coin" running the own gate-bites' flaky coin (FLAKY_FAIL=2,5 fails runs 2 and 5) with ``keys``
    (repeat, min_pass_rate, ...), and ``[tiers.t1]`` with ``tier_keys``."""
    return manifest(an_eval("coin", ["python", "flaky.py"], files={"flaky.py": FLAKY}, **keys),
                    tiers={"t1": dict(tier_keys or {})})


def gone(pid: int) -> bool:
    """Whether process ``pid`` has stopped running (gone, or a zombie not yet reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] == "Z"  # a zombie has stopped running
    except FileNotFoundError:
        return True


def git_repo(project, evals: dict[str, str]) -> Project:
    """A stub project committed as the first commit of a fresh git repository (branch main)."""
    proj = stub_project(project, evals)
    (proj.root / ".gitignore").write_text(".evalrun/\n__pycache__/\n")
    git(proj.root, "init", "-q", "-b", "main")
    git(proj.root, "add", "-A")
    git(proj.root, "commit", "-qm", "first")
    return proj
