"""A local stand-in for the GitHub Actions runner, enough to run ``examples/github-actions/evals.yml``.

It reads the workflow, evaluates each job's ``if`` for an event, and runs the
job's steps in order as the runner would: every ``run:`` as a script of its own
under ``bash -e`` in the job's checkout, with ``GITHUB_STEP_SUMMARY``,
``GITHUB_OUTPUT``, ``GITHUB_ENV``, ``GITHUB_ACTIONS``, ``CI`` and the workflow's,
job's and step's ``env`` set, ``${{ matrix.x }}``, ``${{ env.X }}`` and
``${{ secrets.X }}`` substituted. A failed step skips the following ones except
those under ``if: ${{ !cancelled() }}``. The actions the file uses are simulated:

- ``actions/checkout``: the job starts in a fresh ``git clone`` of the project;
- ``actions/setup-python``: a PATH shim whose ``python`` (and, once installed,
  ``evalrun``) are the test venv's, added to ``GITHUB_PATH``, so nothing is
  installed again;
- ``actions/upload-artifact`` / ``download-artifact``: copies through one folder
  per workflow run (``name``, ``path``, ``pattern``, ``merge-multiple``,
  ``if-no-files-found: error``);
- ``mikepenz/action-junit-report``: the report files must exist and parse as XML.

A job that ``runs-on: macos-*`` runs on a simulated macOS (``harness.simulation``:
every Python process of its steps sees ``sys.platform == "darwin"``, no ``/proc``,
no ``unshare``), so its ``pip install`` and ``evalrun`` steps run as a Mac runs them.

The install step (``python -m pip install -r "$REQUIREMENTS"``, pip of the test
venv) runs for real once per session for each requirements file content and pip
setting: pip finds everything satisfied and changes nothing in the venv, so the
same install again can only give the same outcome, which later jobs are handed
(with a line saying so). It was three quarters of the CPU of every job.

Jobs that need nothing of each other may run at once (``run_at_once``), in
threads, each in its own folder, as a matrix's jobs do on the real runner.

Anything else (another action, an expression it does not know) fails loudly, so
a change to the workflow cannot pass here by being ignored.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import shutil
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.simulation import simulated_env

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
VENV_BIN = Path(sys.executable).parent


PIP_STEP = 'python -m pip install -r "$REQUIREMENTS"'
_INSTALLS: dict[tuple[bytes, tuple[tuple[str, str], ...]], tuple[int, str]] = {}  # this session's, by what pip read
_INSTALLS_LOCK = threading.Lock()


class UnsupportedWorkflow(AssertionError):
    """The workflow uses something this runner does not simulate."""


@dataclass
class StepOutcome:
    name: str
    code: int | None  # None: skipped
    output: str = ""


@dataclass
class JobOutcome:
    job: str
    matrix: dict[str, Any]
    steps: list[StepOutcome] = field(default_factory=list)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return all(s.code in (0, None) for s in self.steps) and any(s.code == 0 for s in self.steps)

    def step(self, fragment: str) -> StepOutcome:
        return next(s for s in self.steps if fragment in s.name)

    def log(self) -> str:
        return "\n".join(f"--- {s.name}: exit {s.code}\n{s.output}" for s in self.steps)


def load_workflow(path: Path) -> dict[str, Any]:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(path.read_text())


def job_runs(flow: dict[str, Any], name: str, event: str) -> bool:
    """Whether the job's ``if`` holds for ``event`` (only the expressions the example uses)."""
    condition = flow["jobs"][name].get("if")
    return True if condition is None else _condition(str(condition), event)


def _condition(text: str, event: str) -> bool:
    inner = EXPRESSION.fullmatch(text.strip())
    expr = inner.group(1) if inner else text
    expr = expr.replace("!cancelled()", "True").replace("success()", "True").replace("always()", "True")
    expr = expr.replace("github.event_name", repr(event)).replace("&&", " and ").replace("||", " or ")
    if re.search(r"[A-Za-z_]+\(|\bgithub\.|\bsecrets\.|\bmatrix\.", expr):
        raise UnsupportedWorkflow(f"if: {text!r}: an expression the local runner does not evaluate")
    return bool(eval(expr, {"__builtins__": {}}, {"True": True}))  # noqa: S307 - the tiny language above


def substitute(text: str, context: dict[str, dict[str, Any]]) -> str:
    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        scope, _, key = expr.partition(".")
        if scope in context and key and re.fullmatch(r"[A-Za-z0-9_-]+", key):
            return str(context[scope].get(key, ""))
        raise UnsupportedWorkflow(f"${{{{ {expr} }}}}: an expression the local runner does not substitute")

    return EXPRESSION.sub(one, text)


@dataclass
class Runner:
    """One workflow run: its project to clone, its artifacts folder, its secrets and runner environment."""

    flow: dict[str, Any]
    origin: Path  # the git repository actions/checkout clones
    scratch: Path
    secrets: dict[str, str] = field(default_factory=dict)
    base_env: dict[str, str] = field(default_factory=dict)
    shim_evalrun: bool = True  # False: evalrun is not installed (the install did not provide it)
    event: str = "pull_request"

    def __post_init__(self) -> None:
        self.artifacts = self.scratch / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self._jobs = itertools.count(1)  # next() is atomic: the jobs of a matrix may run at once, in threads

    def run_at_once(self, *jobs: tuple[str, dict[str, Any] | None]) -> list[JobOutcome]:
        """Jobs that need nothing of each other ((name, matrix) each: a matrix's shards, a pull request's
        jobs), started all at once as the runner starts them; their outcomes in the order given."""
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            return list(pool.map(lambda job: self.run_job(*job), jobs))

    def run_job(self, name: str, matrix: dict[str, Any] | None = None) -> JobOutcome:
        job = self.flow["jobs"][name]
        home = self.scratch / f"job-{next(self._jobs)}-{name}"
        workspace, runner_temp = home / "workspace", home / "runner-temp"
        runner_temp.mkdir(parents=True)
        files = {k: runner_temp / f"{k.lower()}.txt"
                 for k in ("GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH")}
        for f in files.values():
            f.touch()
        outcome = JobOutcome(name, dict(matrix or {}))
        env: dict[str, str] = dict(self.base_env)
        # A fresh runner has no evalrun before the install step: neither this venv's nor that of any
        # other venv active where the tests were started (a user's `. .venv/bin/activate`, then .ci/run).
        path = [p for p in env.get("PATH", os.defpath).split(os.pathsep)
                if Path(p) != VENV_BIN and not (Path(p) / "evalrun").exists()]
        env.update(
            PATH=os.pathsep.join(path), CI="true", GITHUB_ACTIONS="true", GITHUB_EVENT_NAME=self.event,
            GITHUB_WORKSPACE=str(workspace), RUNNER_TEMP=str(runner_temp), GITHUB_JOB=name,
            **{k: str(v) for k, v in files.items()},
        )
        if str(job.get("runs-on", "")).startswith("macos"):  # every Python process of the job sees a Mac
            env = simulated_env("macos", {**env, "TMPDIR": str(runner_temp)})  # macOS: a TMPDIR of the user's own
        context: dict[str, dict[str, Any]] = {"matrix": outcome.matrix, "secrets": self.secrets, "env": {}}
        for scope in (self.flow.get("env") or {}, job.get("env") or {}):
            for key, value in scope.items():
                env[key] = substitute(str(value), context)
                context["env"][key] = env[key]
        failed = False
        for index, step in enumerate(job["steps"]):
            label = substitute(str(step.get("name") or step.get("uses") or step.get("run", "")).splitlines()[0], context)
            condition = step.get("if")
            runs = (not failed) if condition is None else (_condition(str(condition), self.event) and
                                                           ("cancelled()" in str(condition) or not failed))
            if not runs:
                outcome.steps.append(StepOutcome(label, None))
                continue
            step_env = dict(env)
            for key, value in (step.get("env") or {}).items():
                step_env[key] = substitute(str(value), context)
            if "run" in step:
                result = self._run(substitute(str(step["run"]), context), workspace, step_env, runner_temp, index)
            else:
                result = self._uses(step, workspace, context, home, files["GITHUB_PATH"])
            outcome.steps.append(StepOutcome(label, result[0], result[1]))
            failed = failed or result[0] != 0
            added = [line for line in files["GITHUB_PATH"].read_text().splitlines() if line]
            if added:  # GITHUB_PATH: folders put in front of PATH for the later steps (setup-python's)
                env["PATH"] = os.pathsep.join([*reversed(added), *path])
            for line in files["GITHUB_ENV"].read_text().splitlines():  # later steps see what a step exported
                if "=" in line:
                    key, _, value = line.partition("=")
                    env[key] = value
                    context["env"][key] = value
        outcome.summary = files["GITHUB_STEP_SUMMARY"].read_text()
        return outcome

    def _run(self, script: str, workspace: Path, env: dict[str, str], temp: Path, index: int) -> tuple[int, str]:
        if script.strip() == PIP_STEP and env.get("REQUIREMENTS"):
            requirements = workspace / env["REQUIREMENTS"]
            if requirements.is_file():
                key = (requirements.read_bytes(), tuple(sorted((k, v) for k, v in env.items()
                                                               if k.startswith("PIP_") or k == "SIMULATED_PLATFORM")))
                with _INSTALLS_LOCK:  # jobs run at once: one of them installs, the others wait for its outcome
                    if key not in _INSTALLS:
                        _INSTALLS[key] = self._bash(script, workspace, env, temp, index)
                        return _INSTALLS[key]
                    code, output = _INSTALLS[key]
                return code, output + "(this requirements file was installed into the venv earlier in the session: its outcome)\n"
        return self._bash(script, workspace, env, temp, index)

    def _bash(self, script: str, workspace: Path, env: dict[str, str], temp: Path, index: int) -> tuple[int, str]:
        path = temp / f"step-{index}.sh"
        path.write_text(script)
        proc = subprocess.run(["bash", "-e", str(path)], cwd=workspace, env=env, capture_output=True, text=True,
                              timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def _uses(
        self, step: dict[str, Any], workspace: Path, context: dict[str, dict[str, Any]], home: Path, github_path: Path
    ) -> tuple[int, str]:
        action = str(step["uses"]).split("@", 1)[0]
        given = {k: substitute(str(v), context) for k, v in (step.get("with") or {}).items()}
        if action == "actions/checkout":
            proc = subprocess.run(["git", "clone", "-q", str(self.origin), str(workspace)], capture_output=True, text=True)
            return proc.returncode, proc.stdout + proc.stderr
        if action == "actions/setup-python":
            shim = home / "python-shim"
            shim.mkdir()
            programs = ["python", "python3", "pip"] + (["evalrun"] if self.shim_evalrun else [])
            for program in programs:
                target = VENV_BIN / program
                (shim / program).write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
                (shim / program).chmod(0o755)
            with github_path.open("a") as fh:
                fh.write(f"{shim}\n")
            return 0, f"PATH shim for {given.get('python-version')}: {shim}"
        if action == "actions/upload-artifact":
            return self._upload(workspace, given)
        if action == "actions/download-artifact":
            return self._download(workspace, given)
        if action == "mikepenz/action-junit-report":
            for pattern in given["report_paths"].split(","):
                matched = list(workspace.glob(pattern.strip()))
                if not matched:
                    return 1, f"no JUnit report matches {pattern}"
                for report in matched:
                    ET.parse(report)
            return 0, "JUnit reports parsed"
        raise UnsupportedWorkflow(f"uses: {step['uses']}: an action the local runner does not simulate")

    def _upload(self, workspace: Path, given: dict[str, str]) -> tuple[int, str]:
        source = workspace / given["path"]
        files = [p for p in source.rglob("*") if p.is_file()] if source.is_dir() else ([source] if source.is_file() else [])
        if not files:
            code = 1 if given.get("if-no-files-found") == "error" else 0
            return code, f"no files found at {given['path']}"
        target = self.artifacts / given["name"]
        if target.exists():
            return 1, f"an artifact named {given['name']} was uploaded already"
        for file in files:
            dest = target / file.relative_to(source if source.is_dir() else source.parent)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, dest)
        return 0, f"uploaded {len(files)} files as {given['name']}"

    def _download(self, workspace: Path, given: dict[str, str]) -> tuple[int, str]:
        names = sorted(p.name for p in self.artifacts.iterdir() if fnmatch.fnmatch(p.name, given.get("pattern", "*")))
        target = workspace / given.get("path", ".")
        for name in names:
            dest = target if given.get("merge-multiple") in ("true", "True") else target / name
            shutil.copytree(self.artifacts / name, dest, dirs_exist_ok=True)
        return 0, f"downloaded {', '.join(names) or 'nothing'}"
