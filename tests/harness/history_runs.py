"""A committed project recorded good, broken, good: the history CLI and report tests read its runs.

One eval, calc, whose checks follow a state file committed before each
run; a check name and evidence that are a script tag, for the HTML tests.
"""

from __future__ import annotations

from typing import Any

from harness.git import git
from harness.manifest_builder import an_eval, manifest

HOSTILE = "<script>alert(1)</script>"

SCORER = f'''
from pathlib import Path
from evalrun import scorer

state = Path("state.txt").read_text().strip()
with scorer.check("adds") as c:
    c.equal(1 + 1, 2)
    c.equal(2 + 2, 4)
with scorer.check("stays green") as c:
    c.true(state != "broken", "the state file says broken")
if state != "vanished":
    with scorer.check("kept") as c:
        c.equal(state in ("good", "broken"), True)
with scorer.check({HOSTILE!r}) as c:
    c.true(True)
    c.evidence({HOSTILE!r})
scorer.metric("latency_ms", {{"good": 120, "broken": 480, "vanished": 130}}[state])
'''


def calc_project(state: str = "good", **tables: Any) -> dict[str, str | bytes]:
    """The files of a project whose one eval, calc, reads its state file (good, broken or vanished)."""
    return manifest(an_eval("calc", files={"score.py": SCORER, "state.txt": f"{state}\n"}), tiers={"t1": {}},
                    **tables).project()


def commit_state(project, state: str) -> str:
    project.write({"evals/calc/state.txt": state + "\n"})
    git(project.root, "add", "-A")
    git(project.root, "commit", "-qm", state)
    return git(project.root, "rev-parse", "HEAD").strip()


def three_runs(project, env: dict[str, str]) -> list[tuple[str, int]]:
    """good, broken, good: one commit and one ``evalrun t1`` each; returns (commit, exit code) per run."""
    project.write(calc_project())
    git(project.root, "init", "-q", "-b", "main")
    assert project.run("baseline", "--update", "t1", env=env).code == 0
    out = []
    for state in ("good", "broken", "good"):
        commit = commit_state(project, state)
        out.append((commit, project.run("t1", env=env).code))
    return out
