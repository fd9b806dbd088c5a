"""What a macOS user sees, on a simulated macOS (``harness.simulation``: no /proc, no pidfd, no unshare or prctl,
``sys.platform == "darwin"``): the repository's own t1 and t2 green, the header saying why they are not isolated,
and no fork, from a threaded process or otherwise, just to learn that namespaces are Linux only."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from harness import REPO, Project, an_eval, manifest
from harness.simulation import simulated_evalrun, users_own_tmpdir

NOT_ISOLATED = "network: not isolated: network namespaces are Linux only"


def _env(tmp_path: Path, tmpdir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_"))
           and k not in ("CI", "GATE_BITES_BREAK", "GATE_BITES_CASES")}
    return {**env, "NO_COLOR": "1", "SIMULATED_FORK_LOG": str(tmp_path / "forks.log"), "TMPDIR": str(tmpdir), **extra}


def _forks(tmp_path: Path) -> list[str]:
    log = tmp_path / "forks.log"
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.xdist_group("postgres")  # t2 starts the own embedded PostgreSQL
def test_the_own_t1_and_t2_are_green_on_macos_and_say_why_they_are_not_isolated(tmp_path: Path) -> None:
    for tier in ("t1", "t2"):
        out = tmp_path / f"{tier}.json"
        with users_own_tmpdir() as tmpdir:
            run = simulated_evalrun("macos", REPO, tier, "-j", "2", "--json", str(out), env=_env(tmp_path, tmpdir))
        assert run.code == 0, run.output
        assert run.out.splitlines()[0] == NOT_ISOLATED, run.out  # the first thing a macOS user reads: why
        assert f"evalrun {tier}: passed (exit 0)" in run.out
        results = json.loads(out.read_text())
        assert results["evals"] and {e["status"] for e in results["evals"]} == {"passed"}, results["evals"]
        assert "Traceback" not in run.output
    # evalrun never forked (gate-bites' own fork server forks the evalrun runs it checks: that is the scorer's)
    assert [line for line in _forks(tmp_path) if line.split()[1].endswith("evalrun/__main__.py")] == []
    assert not [p for p in (REPO / ".evalrun" / "services").glob("*") if p.suffix in (".json", ".lock")]


def test_bites_with_jobs_on_macos_never_fork_from_its_threads(tmp_path: Path) -> None:
    scorer = ("import json, os\nfrom pathlib import Path\nok = Path('product.txt').read_text().strip() == 'safe'\n"
              "json.dump({'checks': [{'name': 'safe', 'assertions': 1, 'passed': ok}]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n")
    bite = {"name": "leaky", "replace": {"product.txt": "leaky.txt"}, "fails": ["safe"]}
    guarded = manifest(*(an_eval(n, dir="evals/guard", bites=[bite]) for n in ("a", "b"))).text
    proj = Project(tmp_path / "repo").write({"manifest.toml": guarded, "evals/guard/score.py": scorer,
                                             "evals/guard/product.txt": "safe\n", "evals/guard/leaky.txt": "leaky\n",
                                             ".gitignore": ".evalrun/\n"})
    git_env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "guarded"]):
        subprocess.run(["git", *args], cwd=proj.root, env=git_env, check=True, capture_output=True)
    with users_own_tmpdir() as tmpdir:
        run = simulated_evalrun("macos", proj.root, "bites", "t1", "-j", "2", env=_env(tmp_path, tmpdir))
    assert run.code == 0, run.output
    assert "2 caught, 0 not caught, 0 broken" in run.out
    assert _forks(tmp_path) == []  # bites' worker threads asked the platform first, and never forked
