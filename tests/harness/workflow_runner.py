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
- a composite action of a local folder (``actions``: what ``uses:`` names it by, e.g.
  evalrun's own ``action.yml``): its steps run as the job's, with ``${{ inputs.x }}``
  (``with:`` over the defaults), ``${{ github.action_path }}`` and
  ``${{ steps.ID.outputs.x }}`` substituted, and its ``if:`` conditions evaluated. Its
  ``python -m pip install`` commands are written to ``pip_log`` instead of run: installing
  evalrun from its own folder would replace this venv's editable install and needs the build
  backend from the index; the test venv's evalrun stands in for what it installs.
- ``mikepenz/action-junit-report``: the report files must exist and parse as XML, and it
  creates a check run, so the job's token must hold ``checks: write``: the job's
  ``permissions`` (else the workflow's) must grant it, and a fork's pull request
  (``fork=True``) has a read-only token whatever they ask, as on GitHub, where
  the action fails with "Resource not accessible by integration".

``github.event.pull_request.head.repo.fork`` in an ``if:`` is the run's ``fork``
(false for other events, as GitHub's null is).

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


def job_runs(flow: dict[str, Any], name: str, event: str, fork: bool = False) -> bool:
    """Whether the job's ``if`` holds for ``event`` (only the expressions the example uses)."""
    condition = flow["jobs"][name].get("if")
    return True if condition is None else _condition(str(condition), event, fork)


def _condition(text: str, event: str, fork: bool = False) -> bool:
    inner = EXPRESSION.fullmatch(text.strip())
    expr = inner.group(1) if inner else text
    expr = expr.replace("!cancelled()", "True").replace("success()", "True").replace("always()", "True")
    expr = expr.replace("github.event.pull_request.head.repo.fork", repr(fork and event == "pull_request"))
    expr = expr.replace("github.event_name", repr(event)).replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if re.search(r"[A-Za-z_]+\(|\bgithub\.|\bsecrets\.|\bmatrix\.", expr):
        raise UnsupportedWorkflow(f"if: {text!r}: an expression the local runner does not evaluate")
    return bool(eval(expr, {"__builtins__": {}}, {"True": True}))  # noqa: S307 - the tiny language above


def substitute(text: str, context: dict[str, dict[str, Any]]) -> str:
    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        scope, _, key = expr.partition(".")
        if scope in context and key and re.fullmatch(r"[A-Za-z0-9_-]+", key):
            return str(context[scope].get(key, ""))
        step_output = re.fullmatch(r"steps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)", expr)
        if step_output and "steps" in context:
            return str(context["steps"].get(step_output.group(1), {}).get(step_output.group(2), ""))
        raise UnsupportedWorkflow(f"${{{{ {expr} }}}}: an expression the local runner does not substitute")

    return EXPRESSION.sub(one, text)


def _strategy(job: dict[str, Any], matrix: dict[str, Any]) -> dict[str, Any]:
    """``strategy.job-index`` / ``job-total`` (0-based) of a one-key matrix, as the runner counts its jobs."""
    axes = ((job.get("strategy") or {}).get("matrix") or {})
    if not matrix or not axes:
        return {}
    if len(axes) != 1 or set(axes) != set(matrix):
        raise UnsupportedWorkflow(f"matrix {axes}: the local runner counts the jobs of a one-key matrix only")
    [(key, values)] = axes.items()
    return {"job-index": list(values).index(matrix[key]), "job-total": len(values)}


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
    actions: dict[str, Path] = field(default_factory=dict)  # composite actions in local folders, by their uses: name
    pip_log: Path | None = None  # where a composite action's pip installs are written (required with ``actions``)
    fork: bool = False  # a pull request from a fork: its token is read-only, whatever permissions ask

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
        context: dict[str, dict[str, Any]] = {"matrix": outcome.matrix, "secrets": self.secrets, "env": {},
                                              "strategy": _strategy(job, outcome.matrix)}
        for scope in (self.flow.get("env") or {}, job.get("env") or {}):
            for key, value in scope.items():
                env[key] = substitute(str(value), context)
                context["env"][key] = env[key]
        failed = False
        for index, step in enumerate(job["steps"]):
            label = substitute(str(step.get("name") or step.get("uses") or step.get("run", "")).splitlines()[0], context)
            condition = step.get("if")
            runs = (not failed) if condition is None else (_condition(str(condition), self.event, self.fork) and
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
                result = self._uses(step, workspace, context, home, files["GITHUB_PATH"], step_env, self._token(job))
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

    def _token(self, job: dict[str, Any]) -> dict[str, str]:
        """What the job's GITHUB_TOKEN may do: its ``permissions`` (else the workflow's); all read for a fork."""
        asked = job.get("permissions", self.flow.get("permissions")) or {}
        if isinstance(asked, str):  # read-all / write-all
            asked = {"checks": asked.split("-")[0], "contents": asked.split("-")[0]}
        if self.fork and self.event == "pull_request":
            return {scope: "read" for scope in asked}
        return {str(k): str(v) for k, v in asked.items()}

    def _uses(
        self, step: dict[str, Any], workspace: Path, context: dict[str, dict[str, Any]], home: Path, github_path: Path,
        env: dict[str, str] | None = None,
        token: dict[str, str] | None = None,
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
            if (token or {}).get("checks") != "write":  # it creates a check run
                return 1, ("Error: HttpError: Resource not accessible by integration (the token has checks: "
                           f"{(token or {}).get('checks', 'none')}{'; a fork' + chr(39) + 's token is read-only' if self.fork else ''})")
            for pattern in given["report_paths"].split(","):
                matched = list(workspace.glob(pattern.strip()))
                if not matched:
                    return 1, f"no JUnit report matches {pattern}"
                for report in matched:
                    ET.parse(report)
            return 0, "JUnit reports parsed"
        if action in self.actions:
            return self._composite(self.actions[action], given, workspace, context, home, github_path, dict(env or {}))
        raise UnsupportedWorkflow(f"uses: {step['uses']}: an action the local runner does not simulate")

    def _composite(self, folder: Path, given: dict[str, str], workspace: Path, outer: dict[str, dict[str, Any]],
                   home: Path, github_path: Path, job_env: dict[str, str]) -> tuple[int, str]:
        """A composite action's steps, in order, as the runner runs them; its outputs are not the job's."""
        action = load_workflow(folder / "action.yml")
        assert action["runs"]["using"] == "composite", action["runs"]
        declared = action.get("inputs") or {}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise UnsupportedWorkflow(f"with: {unknown}: inputs the action does not declare")
        inputs = {name: given.get(name, str(spec.get("default", ""))) for name, spec in declared.items()}
        missing = [n for n, spec in declared.items() if spec.get("required") and not inputs[n]]
        if missing:
            return 1, f"required inputs not given: {missing}"
        context: dict[str, dict[str, Any]] = {**outer, "inputs": inputs, "github": {"action_path": str(folder)},
                                              "steps": {}}
        log, failed = [], False
        temp = Path(str(workspace)).parent / "runner-temp"
        assert self.pip_log is not None, "a composite action's installs are recorded: give the Runner a pip_log"
        recorder = home / "pip-recorder"
        recorder.mkdir(exist_ok=True)
        (recorder / "python").write_text(
            '#!/bin/sh\nif [ "$1" = -m ] && [ "$2" = pip ] && [ "$3" = install ]; then\n'
            f'  shift 3; printf "%s\\n" "$*" >> "{self.pip_log}"; exit 0\nfi\nexec "{VENV_BIN / "python"}" "$@"\n')
        (recorder / "python").chmod(0o755)
        for index, step in enumerate(action["runs"]["steps"]):
            condition = step.get("if")
            if condition is None:
                runs = not failed
            else:
                expr = EXPRESSION.sub(lambda m: m.group(1), str(condition).strip())
                expr = EXPRESSION.sub(lambda m: m.group(1), expr)
                expr = re.sub(r"\b(inputs\.[A-Za-z0-9_-]+|steps\.[A-Za-z0-9_-]+\.outputs\.[A-Za-z0-9_-]+)",
                              lambda m: repr(substitute("${{ " + m.group(1) + " }}", context)), expr)
                runs = _condition(expr, self.event) and ("cancelled()" in str(condition) or not failed)
            label = substitute(str(step.get("name") or step.get("uses")), context)
            if not runs:
                log.append(f"  - {label}: skipped")
                continue
            added = [line for line in github_path.read_text().splitlines() if line]  # setup-python's, in here too
            env = {**job_env, "PATH": os.pathsep.join([str(recorder), *reversed(added), job_env.get("PATH", "")])}
            for key, value in (step.get("env") or {}).items():
                env[key] = substitute(str(value), context)
            if "run" in step:
                assert step.get("shell") == "bash", "a composite action's run step names its shell"
                output_file = temp / f"action-output-{index}.txt"
                output_file.write_text("")
                env["GITHUB_OUTPUT"] = str(output_file)
                code, text = self._bash(substitute(str(step["run"]), context), workspace, env, temp, 1000 + index)
                outputs = dict(line.split("=", 1) for line in output_file.read_text().splitlines() if "=" in line)
                if step.get("id"):
                    context["steps"][step["id"]] = outputs
            else:
                code, text = self._uses(step, workspace, context, home, github_path, env)
            log.append(f"  - {label}: exit {code}\n{text}")
            failed = failed or code != 0
        return (1 if failed else 0), "\n".join(log)

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
