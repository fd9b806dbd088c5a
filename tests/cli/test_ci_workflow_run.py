"""The workflow users copy, run for real: every job's steps in a fresh clone of a sample project.

``examples/github-actions/evals.yml`` is read and its jobs run by a local
stand-in for the runner (``tests/harness/workflow_runner.py``): ``run:`` steps under
``bash -e`` with the runner's variables and the matrix, checkout as a git clone,
setup-python as a PATH shim to this test venv (nothing is installed again: the
project's ``pip install -r requirements.txt`` finds its requirements satisfied,
with no index and without resolving again the dependencies of what this venv
holds, which is the venv's business, not the workflow's: that took pip most of
each job's CPU), artifacts handed from the t3 shards to the merge job through a
folder. The sample project is what ``evalrun init --model`` writes, its t2
fixtures recorded against the fake upstream init wrote and committed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from harness import REPO, eval_entry, json_scorer, wait_until, warm_evalrun
from harness.workflow_runner import Runner, job_runs, load_workflow

WORKFLOW = REPO / "examples" / "github-actions" / "evals.yml"
KEY = "sk-fake-workflow-7654321"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


def _version() -> str:
    try:
        return metadata.version("evalrun-gate")
    except metadata.PackageNotFoundError:
        pytest.fail("this venv has no distribution evalrun-gate (the old name was evalrun); "
                    "reinstall: pip install -e '.[dev]'")


def _env(**extra: str) -> dict[str, str]:
    """The runner's environment: this one without the outer run's evalrun/CI variables, offline pip
    that checks the requirements file's own lines (the pin, a name that does not exist) only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_", "PIP_")) and k != "CI"}
    env.update(GIT_ENV, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_DEPS="1", **extra)
    return env


def _evalrun(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return warm_evalrun(root, *args, env=_env(**env), timeout=300)


def _commit(root: Path) -> None:
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "evals"]):
        subprocess.run(argv, cwd=root, env=_env(), check=True, capture_output=True)


@contextmanager
def _fake_upstream(root: Path) -> Iterator[str]:
    log = root.parent / "fake-upstream.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-u", "evals/fake_upstream.py", "--port", "0"], cwd=root,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        line = wait_until(lambda: next((s for s in log.read_text().splitlines() if "http://" in s), None),
                          within=30, what="the fake upstream's address")
        yield line.split()[2]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


UPSTREAM_LINE = '# upstream = "http://127.0.0.1:8765/v1"'
# The tests of the sample project share it (a module fixture): they stay on one worker, so it is made once.
SHARED = pytest.mark.xdist_group("ci-workflow-run")


@pytest.fixture(scope="module")
def sample_project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Day one of a project made by ``evalrun init --model`` (t1, t3 refused without the key, t3 recorded
    against the fake upstream init wrote, started as the README says, then again by EVALRUN_UPSTREAM), t1
    baselined, all committed, the upstream stopped: the workflow, the repository, its manifest as init wrote
    it, and what each step said."""
    flow = load_workflow(WORKFLOW)
    origin = tmp_path_factory.mktemp("workflow") / "project"
    origin.mkdir()
    init = _evalrun(origin, "init", "--model")
    assert init.returncode == 0, init.stderr
    (origin / "requirements.txt").write_text(f"evalrun-gate[openai]=={_version()}\n")
    manifest = origin / "manifest.toml"
    as_written = manifest.read_text()
    t1, t3 = _evalrun(origin, "t1"), _evalrun(origin, "t3")
    with _fake_upstream(origin) as url:
        # This project's model is a local server: its manifest names it, in the SDKs' /v1 form.
        manifest.write_text(as_written.replace(UPSTREAM_LINE, f'upstream = "{url}"'))
        recorded = _evalrun(origin, "t3", "--record", OPENAI_API_KEY=KEY)
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        upstream_log = (origin.parent / "fake-upstream.log").read_text()
        # EVALRUN_UPSTREAM, without the /v1, reaches the same route.
        again = _evalrun(origin, "t3", "--record", OPENAI_API_KEY=KEY, EVALRUN_UPSTREAM=url.removesuffix("/v1"))
        upstream_log_again = (origin.parent / "fake-upstream.log").read_text()
    baseline = _evalrun(origin, "baseline", "--update", "t1")
    assert baseline.returncode == 0, baseline.stdout + baseline.stderr
    _commit(origin)
    return {"flow": flow, "origin": origin, "as_written": as_written, "init": init, "t1": t1, "t3": t3,
            "recorded": recorded, "upstream_log": upstream_log, "again": again, "upstream_log_again": upstream_log_again}


@SHARED
def test_init_model_records_with_t3_then_replays_green_in_t2_with_the_upstream_stopped(sample_project) -> None:
    # Moved here from tests/test_init_model.py: the workflow's sample project is the same day one; its
    # replay with the upstream stopped is the pull request's t2 job below.
    origin, init = sample_project["origin"], sample_project["init"]
    for line in ("wrote evals/answer/score.py", "wrote evals/fake_upstream.py", 'pythonpath = ["."]', "evalrun t3 --record"):
        assert line in init.stdout, init.stdout
    manifest = sample_project["as_written"]
    assert 'fixtures_for = "answer"' in manifest and 'require = ["env:OPENAI_API_KEY"]' in manifest
    assert "[models]" in manifest and "from openai import OpenAI" in (origin / "evals/answer/score.py").read_text()
    assert UPSTREAM_LINE in manifest

    t1 = sample_project["t1"]
    assert t1.returncode == 0, t1.stdout + t1.stderr
    assert sample_project["t3"].returncode == 2, "t3 requires the key: refused without it"

    record, log = sample_project["recorded"], sample_project["upstream_log"]
    assert record.returncode == 0, record.stdout + record.stderr + log
    assert "POST /v1/chat/completions -> 200" in log  # not /v1/v1/chat/completions
    again = sample_project["again"]
    assert again.returncode == 0, again.stdout + again.stderr
    # " -> 404", not "404": the log's first line names the upstream's port, which may hold those digits (44043)
    assert "/v1/v1" not in sample_project["upstream_log_again"] and " -> 404" not in sample_project["upstream_log_again"]
    fixtures = sorted(p.relative_to(origin).as_posix() for p in (origin / "evals/answer/fixtures").rglob("*.json"))
    assert fixtures == ["evals/answer/fixtures/answer/0001.json"]
    assert KEY not in (origin / fixtures[0]).read_text()


@SHARED
def test_the_workflow_runs_t3_shards_then_merge_nightly(sample_project) -> None:
    flow, origin, as_written = sample_project["flow"], sample_project["origin"], sample_project["as_written"]
    assert [j for j in flow["jobs"] if job_runs(flow, j, "schedule")] == ["t3-shard", "t3"]
    with _fake_upstream(origin) as url:
        # Tonight's model: the upstream the project's manifest names, committed.
        (origin / "manifest.toml").write_text(as_written.replace(UPSTREAM_LINE, f'upstream = "{url}"'))
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-am", "tonight's upstream"], cwd=origin, env=_env(),
                       check=True, capture_output=True)
        nightly = Runner(flow, origin, origin.parent / "nightly", secrets={"OPENAI_API_KEY": KEY}, base_env=_env(),
                         event="schedule")
        shards = nightly.run_at_once(*(("t3-shard", {"shard": i}) for i in (1, 2, 3, 4)))
        for shard in shards:
            assert shard.ok, shard.log()
        assert sum("1 passed" in s.step("evalrun t3").output for s in shards) == 1  # one t3 eval, in one shard
        assert shards[0].step("evalrun t3, shard 1 of 4").name == "evalrun t3, shard 1 of 4"
        merged = nightly.run_job("t3")
        assert merged.ok, merged.log()
        assert "evalrun t3: passed (exit 0)" in merged.step("evalrun merge").output, merged.log()
        assert (nightly.artifacts / "evalrun-t3" / "t3.html").is_file()
        assert (nightly.artifacts / "evalrun-t3" / "t3.xml").is_file()
    assert KEY not in merged.log()


@SHARED
def test_the_workflow_runs_t1_t2_on_pull_requests_without_the_key_or_the_upstream(sample_project) -> None:
    # Pull requests, a fork's too: no secret, and the model upstream is gone.
    flow, origin = sample_project["flow"], sample_project["origin"]
    assert [j for j in flow["jobs"] if job_runs(flow, j, "pull_request")] == ["t1", "t1-macos", "t2"]
    pulls = Runner(flow, origin, origin.parent / "pull", base_env=_env())
    t1, mac, t2 = pulls.run_at_once(("t1", None), ("t1-macos", None), ("t2", None))
    assert t1.ok, t1.log()
    # The macOS job's steps, on a simulated Mac: installed, green, and saying why it is not isolated.
    assert mac.ok, mac.log()
    said = mac.step("evalrun t1 on macOS").output
    assert said.startswith("network: not isolated: network namespaces are Linux only\n"), said
    assert "evalrun t1: passed (exit 0)" in said
    assert (pulls.artifacts / "evalrun-t1-macos" / "t1-macos.xml").is_file()
    assert "Publish the JUnit report" in [s.name for s in t1.steps if s.code == 0]
    assert t1.summary.strip(), "evalrun writes the step summary itself in Actions"
    assert t2.ok, t2.log()
    assert "evalrun t2: passed (exit 0)" in t2.step("evalrun t2").output, t2.log()
    assert KEY not in t1.log() + mac.log() + t2.log()
    [results] = (origin.parent / "pull").glob("job-*-t2/workspace/.evalrun/results/t2.json")
    assert next(e for e in json.loads(results.read_text())["evals"] if e["name"] == "answer")["status"] == "passed"

    # A fork's pull request: its token is read-only whatever the job's permissions ask, so a check run
    # (the JUnit report's, checks: write) cannot be created; t1 still runs, gates and writes its summary.
    fork = Runner(flow, origin, origin.parent / "fork", base_env=_env(), fork=True)
    assert [j for j in flow["jobs"] if job_runs(flow, j, "pull_request", fork=True)] == ["t1", "t1-macos", "t2"]
    forked = fork.run_job("t1")
    assert forked.ok, forked.log()
    assert forked.step("Publish the JUnit report").code is None, "skipped for a fork, not failed"
    assert "evalrun t1: passed (exit 0)" in forked.step("evalrun t1").output and forked.summary.strip()
    # The runner holds the action to the token: had the step run with the fork's token, it would have failed.
    publish = next(s for s in flow["jobs"]["t1"]["steps"] if s.get("name") == "Publish the JUnit report")
    code, said = fork._uses(publish, origin, {"matrix": {}, "secrets": {}, "env": {}}, origin.parent, origin / "p",
                            fork._token(flow["jobs"]["t1"]))
    assert code == 1 and "Resource not accessible by integration" in said, said


def _small_project(root: Path, failing: bool = True) -> Path:
    files = {
        "manifest.toml": "[tiers.t1]\n[tiers.t3]\n" + eval_entry("ok", tier="t3")
        + eval_entry("bad", tier="t3") + eval_entry("static"),
        "evals/ok/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": True}]),
        "evals/bad/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": not failing}]),
        "evals/static/score.py": json_scorer([{"name": "fine", "assertions": 1, "passed": True}]),
        "requirements.txt": f"evalrun-gate=={_version()}\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _commit(root)
    return root


def test_a_shards_own_failure_passes_its_job_and_merge_decides_the_night(tmp_path: Path) -> None:
    origin = _small_project(tmp_path / "project")
    # The team's history: an SQLite file that outlives the runners (a cache, here a folder), two nights in a row.
    history = {"EVALRUN_HISTORY_URL": f"sqlite:{tmp_path / 'cache' / 'history.sqlite'}"}
    runner = Runner(load_workflow(WORKFLOW), origin, tmp_path / "run", base_env=_env(), event="schedule",
                    secrets=history)
    shards = runner.run_at_once(*(("t3-shard", {"shard": i}) for i in (1, 2, 3, 4)))
    assert all(s.ok for s in shards), "\n".join(s.log() for s in shards)
    # --shard auto from the matrix's strategy.job-index (0-based); the first night has no durations yet.
    assert "shard 3/4 (GitHub matrix: EVALRUN_SHARD_INDEX=2, EVALRUN_SHARD_TOTAL=4, 0-based), split by name" in (
        shards[2].step("evalrun t3").output), shards[2].log()
    assert any("exited 1" in s.step("evalrun t3").output for s in shards)  # the shard with the failing eval
    assert any("exited 5" in s.step("evalrun t3").output for s in shards)  # a shard left with no evals
    merged = runner.run_job("t3")
    assert not merged.ok and merged.step("evalrun merge").code == 1, merged.log()
    assert merged.step("HTML report").code == 0  # the report still runs after the failed verdict
    assert (runner.artifacts / "evalrun-t3" / "t3.html").is_file()

    # The next night: the merged night is in the history, and the shards balance by it.
    night2 = Runner(load_workflow(WORKFLOW), origin, tmp_path / "night2", base_env=_env(), event="schedule",
                    secrets=history)
    shards = night2.run_at_once(*(("t3-shard", {"shard": i}) for i in (1, 2, 3, 4)))
    assert all(s.ok for s in shards), "\n".join(s.log() for s in shards)
    assert all("balanced by history (median of 1 run" in s.step("evalrun t3").output for s in shards), (
        "\n".join(s.log() for s in shards))


def test_a_shard_where_evalrun_did_not_start_fails_its_job(tmp_path: Path) -> None:
    origin = _small_project(tmp_path / "project", failing=False)
    flow = load_workflow(WORKFLOW)
    missing = Runner(flow, origin, tmp_path / "missing", base_env=_env(), event="schedule", shim_evalrun=False)
    job = missing.run_job("t3-shard", {"shard": 1})
    assert not job.ok and job.step("evalrun t3").code == 127, job.log()
    assert "::error::evalrun t3 did not run (exit 127)" in job.step("evalrun t3").output
    assert job.step("Upload the shard's results").code is None  # skipped: nothing reaches the merge

    (origin / "manifest.toml").write_text((origin / "manifest.toml").read_text() + "timout = 3\n")
    subprocess.run(["git", "commit", "-qam", "a typo"], cwd=origin, env=_env(), check=True)
    broken = Runner(flow, origin, tmp_path / "broken", base_env=_env(), event="schedule").run_job("t3-shard", {"shard": 2})
    assert not broken.ok and broken.step("evalrun t3").code == 2, broken.log()
    assert "::error::evalrun t3 did not run (exit 2)" in broken.step("evalrun t3").output


def test_an_install_error_fails_the_job_instead_of_being_hidden(tmp_path: Path) -> None:
    origin = _small_project(tmp_path / "project", failing=False)
    (origin / "requirements.txt").write_text("evalrun-gate-does-not-exist==0.0.1\n")
    subprocess.run(["git", "commit", "-qam", "a bad requirement"], cwd=origin, env=_env(), check=True)
    job = Runner(load_workflow(WORKFLOW), origin, tmp_path / "run", base_env=_env(), event="schedule").run_job(
        "t3-shard", {"shard": 1})
    assert job.step("Install").code not in (0, None), job.log()
    assert job.step("evalrun t3").code is None and not job.ok
