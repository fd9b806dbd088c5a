"""Inspect AI and promptfoo, the real tools, gated through evalrun in every scenario of issue 20.

Each tool runs as few times as it can: a module fixture runs it once for all
the variants of a suite (Inspect: one ``inspect eval`` of five tasks that all
call themselves ``quiz``; promptfoo: one run per config, all at once), and
evalrun is run over what each variant wrote. The baseline (in the module
fixture, beside the variants' run) and a broken config (a test of its own) are
real runs through evalrun itself (``baseline --update`` runs the tool with the
log folder evalrun gives it). The tools stay offline: see ``eval_tools``.
"""

from __future__ import annotations

import json
import os
import sys
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from harness import Project, an_eval, manifest
from harness.eval_tools import PROMPTFOO_ENV, inspect_bin, offline_prefix, promptfoo_bin, tiktoken_cache

# Each tool's tests stay on one worker, so its module fixture runs the tool once; the two tools' groups
# may go to two workers, so neither waits for the other's setup.
INSPECT = pytest.mark.xdist_group("eval-tools-inspect")
PROMPTFOO = pytest.mark.xdist_group("eval-tools-promptfoo")

COPY_LOG = """\
import os, shutil, sys
# Hand evalrun a log the real tool wrote in this module's one run, as if the tool had just written it.
folder = os.environ["INSPECT_LOG_DIR"]
os.makedirs(folder, exist_ok=True)
shutil.copy(sys.argv[1], folder)
"""

INSPECT_TASKS = '''\
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes, match
from inspect_ai.solver import Generate, TaskState, generate, solver

RIGHT = "Default output"  # what mockllm/model's answer begins with


def quiz(ids, wrong=(), solver=None, **kwargs):
    dataset = [Sample(id=i, input=f"question {i}", target="nope" if i in wrong else RIGHT) for i in ids]
    return Task(name="quiz", dataset=dataset, solver=solver or [generate()],
                scorer=[includes(), match(location="begin")], **kwargs)


@solver
def explode_on(sample_id):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id == sample_id:
            raise RuntimeError(f"the tool broke on sample {sample_id}")
        return await generate(state)
    return solve


@task
def quiz_all():
    return quiz(["alpha", "beta", "gamma"])


@task
def quiz_fail():
    return quiz(["alpha", "beta", "gamma"], wrong=["beta"])


@task
def quiz_removed():
    return quiz(["alpha", "gamma"])


@task
def quiz_sample_error():
    return quiz(["alpha", "beta", "gamma"], solver=[explode_on("beta")], fail_on_error=False)


@task
def quiz_task_error():
    return quiz(["alpha", "beta", "gamma"], solver=[explode_on("beta")])
'''
INSPECT_VARIANTS = ("quiz_fail", "quiz_removed", "quiz_sample_error", "quiz_task_error")


def suite_manifest(run: list[str], fmt: str, **keys: Any) -> str:
    return manifest(an_eval("suite", run, dir="e", format=fmt, timeout=240, **keys)).text


def eval_result(proj: Project) -> dict[str, Any]:
    return proj.eval_result("suite")


# --- Inspect AI -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inspect_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    inspect_bin()
    cache = tiktoken_cache(tmp_path_factory.mktemp("tiktoken"))
    return {"TIKTOKEN_CACHE_DIR": str(cache), "INSPECT_DISPLAY": "plain", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def inspect_suite(tmp_path_factory: pytest.TempPathFactory, inspect_env: dict[str, str]) -> dict[str, Any]:
    """The variants' logs (one real ``inspect eval`` of four tasks, JSON logs) and a project baselined by a real run (.eval)."""
    root = tmp_path_factory.mktemp("inspect")
    proj = Project(root).write({"e/tasks.py": INSPECT_TASKS, "e/copy_log.py": COPY_LOG})
    logs = root / "variant-logs"
    # The variants write JSON logs, the baseline run an .eval: the two formats give the same names.
    argv = [*offline_prefix(), str(inspect_bin()), "eval", *(f"tasks.py@{t}" for t in INSPECT_VARIANTS),
            "--model", "mockllm/model", "--log-format", "json"]
    variants = subprocess.Popen(
        argv, cwd=root / "e", env={**proj.env(inspect_env), "INSPECT_LOG_DIR": str(logs)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        real = [*offline_prefix(), str(inspect_bin()), "eval", "tasks.py@quiz_all", "--model", "mockllm/model"]
        proj.write({"manifest.toml": suite_manifest(real, "inspect")})
        baseline = proj.run("baseline", "--update", "t1", env=inspect_env, timeout=300)
        baseline_results = proj.results()
        output, _ = variants.communicate(timeout=300)
    finally:
        variants.kill() if variants.poll() is None else None
        variants.wait()
    from inspect_ai.log import read_eval_log  # the tool's own reader, for its own counts

    by_task = {}
    for path in logs.iterdir():
        log = read_eval_log(str(path))
        by_task[log.eval.task_registry_name] = (path, log)
    assert set(by_task) == set(INSPECT_VARIANTS), output
    assert all(path.suffix == ".json" for path, _ in by_task.values())
    return {
        "project": proj, "baseline": baseline, "baseline_results": baseline_results,
        "logs": by_task, "variants_exit": variants.returncode, "output": output,
    }


def run_inspect_variant(suite: dict[str, Any], variant: str, env: dict[str, str]) -> tuple[Any, dict[str, Any]]:
    proj: Project = suite["project"]
    path, _ = suite["logs"][variant]
    proj.write({"manifest.toml": suite_manifest(["python", "copy_log.py", str(path)], "inspect")})
    outcome = proj.run("t1", env=env)
    return outcome, eval_result(proj)


@INSPECT
def test_inspect_baseline_counts_equal_inspects_own_and_metrics_carry_over(inspect_suite) -> None:
    assert inspect_suite["baseline"].code == 0, inspect_suite["baseline"].output
    result = next(e for e in inspect_suite["baseline_results"]["evals"] if e["name"] == "suite")
    names = [c["name"] for c in result["checks"]]
    assert names == [f"quiz > {s} > {scorer}" for s in ("alpha", "beta", "gamma") for scorer in ("includes", "match")]
    assert all(c["passed"] and c["assertions"] == 1 for c in result["checks"])
    assert result["metrics"]["quiz/includes/accuracy"] == 1.0
    assert result["metrics"]["quiz/match/accuracy"] == 1.0
    baseline = (inspect_suite["project"].root / "baselines" / "t1.toml").read_text()
    assert '"quiz > beta > match" = 1' in baseline
    # Inspect's own count, from its own reader, of a log of the same three samples and two scorers:
    _, log = inspect_suite["logs"]["quiz_fail"]
    assert len(names) == sum(score.scored_samples for score in log.results.scores) == 6


@INSPECT
def test_inspect_failing_sample_exits_1(inspect_suite, inspect_env) -> None:
    outcome, result = run_inspect_variant(inspect_suite, "quiz_fail", inspect_env)
    assert outcome.code == 1, outcome.output
    failed = {c["name"]: c["message"] for c in result["checks"] if not c["passed"]}
    assert set(failed) == {"quiz > beta > includes", "quiz > beta > match"}
    assert "scored I" in failed["quiz > beta > includes"]
    _, log = inspect_suite["logs"]["quiz_fail"]
    accuracy = log.results.scores[0].metrics["accuracy"].value
    assert result["metrics"]["quiz/includes/accuracy"] == pytest.approx(accuracy) == pytest.approx(2 / 3)


@INSPECT
def test_inspect_removed_sample_exits_3(inspect_suite, inspect_env) -> None:
    outcome, result = run_inspect_variant(inspect_suite, "quiz_removed", inspect_env)
    assert outcome.code == 3, outcome.output
    assert "quiz > beta > includes" in outcome.output and all(c["passed"] for c in result["checks"])


@INSPECT
def test_inspect_errored_sample_under_no_fail_on_error_exits_1_with_the_error(inspect_suite, inspect_env) -> None:
    _, log = inspect_suite["logs"]["quiz_sample_error"]
    assert log.status == "success"  # Inspect's own verdict; evalrun's differs
    outcome, result = run_inspect_variant(inspect_suite, "quiz_sample_error", inspect_env)
    assert outcome.code == 1, outcome.output
    failed = {c["name"]: c["message"] for c in result["checks"] if not c["passed"]}
    assert set(failed) == {"quiz > beta > includes", "quiz > beta > match"}
    assert "the tool broke on sample beta" in failed["quiz > beta > match"]


@INSPECT
def test_inspect_errored_task_exits_1_with_the_error_though_inspect_exits_0(inspect_suite, inspect_env) -> None:
    _, log = inspect_suite["logs"]["quiz_task_error"]
    assert log.status == "error"
    assert inspect_suite["variants_exit"] == 0, inspect_suite["output"]  # Inspect exits 0 when a task errors
    outcome, result = run_inspect_variant(inspect_suite, "quiz_task_error", inspect_env)
    assert outcome.code == 1, outcome.output
    assert result["status"] == "failed"
    assert "Inspect task quiz ended in error" in result["message"]
    assert "the tool broke on sample beta" in result["message"]


def test_inspect_bad_config_exits_1_with_inspects_error_line(inspect_env, tmp_path: Path) -> None:
    # A project of its own: one tool run, on whichever worker is free.
    proj = Project(tmp_path).write({"e/tasks.py": INSPECT_TASKS})
    broken = [*offline_prefix(), str(inspect_bin()), "eval", "tasks.py@no_such_task", "--model", "mockllm/model"]
    proj.write({"manifest.toml": suite_manifest(broken, "inspect")})
    outcome = proj.run("t1", env=inspect_env, timeout=300)
    assert outcome.code == 1, outcome.output
    assert "Task named 'no_such_task' not found" in eval_result(proj)["message"]


@INSPECT
def test_tiktoken_loads_o200k_base_offline_from_the_built_cache(inspect_env) -> None:
    # The same load Inspect's mockllm does when it counts tokens, in a process that has no network.
    code = "import tiktoken; print(len(tiktoken.get_encoding('o200k_base').encode('hello world')))"
    proc = subprocess.run([*offline_prefix(), sys.executable, "-c", code], env={**os.environ, **inspect_env},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "2"


# --- promptfoo --------------------------------------------------------------------------------------------

PROVIDER_JS = """\
// A local provider: no network. It shouts the prompt back, and throws on BOOM.
class Shout {
  id() { return 'shout'; }
  async callApi(prompt) {
    if (prompt.includes('BOOM')) throw new Error('the provider broke on BOOM');
    return { output: prompt.toUpperCase() };
  }
}
module.exports = Shout;
"""


def promptfoo_config(*, fail: bool = False, drop_case: bool = False, drop_assert: bool = False,
                     error: bool = False) -> str:
    tests = [
        {"description": "shouts hello", "vars": {"word": "hello"},
         "assert": [{"type": "contains", "value": "HELLO"}, {"type": "icontains", "value": "say"}][: 1 if drop_assert else 2]},
        {"vars": {"word": "world"}, "assert": [{"type": "contains", "value": "WORLD"}]},
        {"description": "shouts boom" if error else "shouts abc", "vars": {"word": "BOOM" if error else "abc"},
         "assert": [{"type": "contains", "value": "XYZ" if fail else ("BOOM" if error else "ABC")}]},
    ]
    if drop_case:
        del tests[1]
    return json.dumps({"prompts": ["say {{word}}"], "providers": [{"id": "file://provider.js", "label": "shout"}],
                       "tests": tests}, indent=1)


PROMPTFOO_VARIANTS = {
    # One config drops a case and another case's assertion: one promptfoo run, each regression said on its own line.
    "fail": {"fail": True}, "drop": {"drop_case": True, "drop_assert": True}, "error": {"error": True},
}


def promptfoo_env(root: Path) -> dict[str, str]:
    return {**PROMPTFOO_ENV, "PROMPTFOO_CONFIG_DIR": str(root / "promptfoo-home"), "NO_COLOR": "1"}


def promptfoo_argv(program: Path, config: str, out: str) -> list[str]:
    return [*offline_prefix(), str(program), "eval", "-c", config, "-o", out, "--no-cache", "--no-table",
            "--no-progress-bar"]


@pytest.fixture(scope="module")
def promptfoo_suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    program = promptfoo_bin()
    root = tmp_path_factory.mktemp("promptfoo")
    files: dict[str, str | bytes] = {"e/provider.js": PROVIDER_JS, "e/all.json": promptfoo_config()}
    files.update({f"e/{name}.json": promptfoo_config(**kw) for name, kw in PROMPTFOO_VARIANTS.items()})
    proj = Project(root).write(files)
    env = promptfoo_env(root)
    runs = {}
    for name in PROMPTFOO_VARIANTS:
        home = {**env, "PROMPTFOO_CONFIG_DIR": str(root / f"home-{name}")}
        runs[name] = subprocess.Popen(promptfoo_argv(program, f"{name}.json", f"{root}/{name}-out.json"),
                                      cwd=root / "e", env=proj.env(home), stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
    try:
        all_argv = promptfoo_argv(program, "all.json", "out.json")
        proj.write({"manifest.toml": suite_manifest(all_argv, "promptfoo", promptfoo="out.json")})
        baseline = proj.run("baseline", "--update", "t1", env=env, timeout=300)
        baseline_results = proj.results()
        own = json.loads((root / "e" / "out.json").read_text())
        outputs = {name: run.communicate(timeout=300)[0] for name, run in runs.items()}
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
            run.wait()
    for name in PROMPTFOO_VARIANTS:
        assert (root / f"{name}-out.json").is_file(), outputs[name]
    return {"project": proj, "root": root, "env": env, "baseline": baseline, "baseline_results": baseline_results,
            "own": own, "exits": {n: r.returncode for n, r in runs.items()}}


def run_promptfoo_variant(suite: dict[str, Any], variant: str) -> tuple[Any, dict[str, Any]]:
    proj: Project = suite["project"]
    copy = ["python", "-c", f"import shutil; shutil.copy({str(suite['root'] / f'{variant}-out.json')!r}, 'out.json')"]
    proj.write({"manifest.toml": suite_manifest(copy, "promptfoo", promptfoo="out.json")})
    outcome = proj.run("t1", env=suite["env"])
    return outcome, eval_result(proj)


@PROMPTFOO
def test_promptfoo_baseline_names_by_description_counts_equal_promptfoos_own(promptfoo_suite) -> None:
    assert promptfoo_suite["baseline"].code == 0, promptfoo_suite["baseline"].output
    result = next(e for e in promptfoo_suite["baseline_results"]["evals"] if e["name"] == "suite")
    checks = {c["name"]: c["assertions"] for c in result["checks"]}
    assert checks == {"shouts hello > shout": 2, "word=world > shout": 1, "shouts abc > shout": 1}
    stats = promptfoo_suite["own"]["results"]["stats"]
    prompt_metrics = promptfoo_suite["own"]["results"]["prompts"][0]["metrics"]
    assert len(checks) == stats["successes"] + stats["failures"] + stats["errors"] == 3
    assert sum(checks.values()) == prompt_metrics["assertPassCount"] + prompt_metrics["assertFailCount"] == 4
    assert result["metrics"]["successes"] == 3


@PROMPTFOO
def test_promptfoo_failing_case_exits_1(promptfoo_suite) -> None:
    assert promptfoo_suite["exits"]["fail"] == 100  # promptfoo's own exit code for failed tests
    outcome, result = run_promptfoo_variant(promptfoo_suite, "fail")
    assert outcome.code == 1, outcome.output
    failed = [c for c in result["checks"] if not c["passed"]]
    assert [c["name"] for c in failed] == ["shouts abc > shout"]
    assert 'contains: Expected output to contain "XYZ"' in failed[0]["message"]


@PROMPTFOO
def test_promptfoo_removed_case_and_removed_assertion_are_each_a_regression_exit_3(promptfoo_suite) -> None:
    outcome, result = run_promptfoo_variant(promptfoo_suite, "drop")
    assert outcome.code == 3, outcome.output
    # the removed case
    assert "word=world > shout" in outcome.output
    assert 'suite: check "word=world > shout" vanished (baseline: 1 assertion)' in outcome.output, outcome.output
    # the removed assertion: asserts less
    assert {c["name"]: c["assertions"] for c in result["checks"]}["shouts hello > shout"] == 1
    assert "shouts hello > shout" in outcome.output
    assert 'suite: check "shouts hello > shout" asserts 1 (baseline: 2)' in outcome.output, outcome.output


@PROMPTFOO
def test_promptfoo_errored_test_exits_1_with_the_error(promptfoo_suite) -> None:
    outcome, result = run_promptfoo_variant(promptfoo_suite, "error")
    assert outcome.code == 1, outcome.output
    failed = {c["name"]: c["message"] for c in result["checks"] if not c["passed"]}
    assert failed == {"shouts boom > shout": "error: Error: the provider broke on BOOM"}


def test_promptfoo_bad_config_exits_1_with_promptfoos_error_line(tmp_path: Path) -> None:
    # A project of its own: one tool run, on whichever worker is free.
    proj = Project(tmp_path).write({"e/provider.js": PROVIDER_JS,
                                    "e/broken.yaml": "prompts:\n  - say\nproviders: [file://provider.js\ntests: []\n"})
    argv = promptfoo_argv(promptfoo_bin(), "broken.yaml", "out.json")
    proj.write({"manifest.toml": suite_manifest(argv, "promptfoo", promptfoo="out.json")})
    outcome = proj.run("t1", env=promptfoo_env(tmp_path), timeout=300)
    assert outcome.code == 1, outcome.output
    bad_result = eval_result(proj)
    assert "YAMLException" in bad_result["message"], bad_result["message"]


def test_the_tools_run_where_no_outside_connection_can_succeed() -> None:
    # What keeps the runs above honest: in the namespace they run in, any outside connection fails at once.
    prefix = offline_prefix()
    if not prefix:
        pytest.skip("unshare -rn is not available here: the tools ran with their telemetry, updates and "
                    "downloads turned off, but not in a network namespace")
    code = textwrap.dedent("""\
        import socket
        try:
            socket.create_connection(("192.0.2.1", 443), timeout=5)
        except OSError as exc:
            print("refused", exc.errno)
        else:
            print("connected")
    """)
    proc = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("refused"), proc.stdout
