"""evalrun's GitHub Action (``action.yml`` at the root): valid against GitHub's action schema, and run.

The action's steps run in the local step runner (``tests/harness/workflow_runner.py``) from a
workflow that uses it as a user's would, in a fresh clone of a small project: it installs
(recorded, see the runner), runs the tier, uploads the results and JUnit, and its job ends
with evalrun's exit code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from harness import REPO, eval_entry, json_scorer
from harness.git import GIT_ENV, git, write
from harness.workflow_runner import Runner

ACTION = REPO / "action.yml"


def _check_action_schema(path: Path) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run([str(program), "--builtin-schema", "vendor.github-actions", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_the_action_matches_githubs_action_schema(tmp_path: Path) -> None:
    assert _check_action_schema(ACTION).returncode == 0, _check_action_schema(ACTION).stdout
    broken = tmp_path / "action.yml"
    broken.write_text(ACTION.read_text().replace("using: composite", "using: compost"))
    assert _check_action_schema(broken).returncode != 0  # the check can fail


def _project(root: Path, passing: bool) -> Path:
    write(root, {
        "manifest.toml": "[tiers.t1]\n" + eval_entry("first") + eval_entry("second"),
        "evals/first/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": True}]),
        "evals/second/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": passing}]),
    })
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-q", "-m", "evals")):
        git(root, *args)
    return root


def _flow(with_: dict[str, str]) -> dict:
    return {"on": "pull_request", "jobs": {"evals": {"runs-on": "ubuntu-latest", "steps": [
        {"uses": "actions/checkout@v4"},
        {"name": "evalrun", "uses": "OWNER/evalrun@v0.1.0", "with": with_},
    ]}}}


def _runner(tmp_path: Path, origin: Path, flow: dict, name: str) -> Runner:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_", "PIP_")) and k != "CI"}
    return Runner(flow, origin, tmp_path / name, base_env={**env, **GIT_ENV}, actions={"OWNER/evalrun": REPO},
                  pip_log=tmp_path / f"{name}-pip.log")


def test_the_action_runs_the_tier_uploads_its_results_and_keeps_evalruns_exit_code(tmp_path: Path) -> None:
    green = _runner(tmp_path, _project(tmp_path / "green", passing=True),
                    _flow({"tier": "t1", "extras": "openai", "shard": "2/2"}), "green")
    job = green.run_job("evals")
    assert job.ok, job.log()
    assert (tmp_path / "green-pip.log").read_text().splitlines() == [f"{REPO}[openai]"]  # evalrun at the action's ref
    shard = green.artifacts / "evalrun-t1-shard-2-of-2"
    results = json.loads((shard / "t1.json").read_text())
    assert results["selection"]["shard"] == ["2/2"] and results["exit_code"] == 0
    assert (shard / "t1.xml").is_file()

    red = _runner(tmp_path, _project(tmp_path / "red", passing=False), _flow({"tier": "t1"}), "red")
    failed = red.run_job("evals")
    assert not failed.ok and failed.step("evalrun").code == 1, failed.log()
    assert "Keep evalrun's exit code: exit 1" in failed.step("evalrun").output  # evalrun's own 1, not the upload's
    assert json.loads((red.artifacts / "evalrun-t1" / "t1.json").read_text())["exit_code"] == 1  # uploaded all the same
