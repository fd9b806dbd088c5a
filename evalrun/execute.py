"""Running the planned evals: one scorer subprocess each, ``-j`` at a time.

This module owns the scorer environment (``EVALRUN_*``), the scratch folders
(an empty workdir for every eval), turning a process outcome plus a report into
an ``EvalResult``, and stopping cleanly on Ctrl-C: running scorers' groups are terminated and every
eval that did not finish is recorded as interrupted.

Preconditions, services and the model proxy are not this module's business: the
caller passes a ``prepare`` hook that returns extra environment or the reason an
eval must not run, and a ``finalize`` hook that may amend a result.
"""

from __future__ import annotations

import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.errors import ReportError
from evalrun.plan import PlannedEval
from evalrun.process import ProcessOutcome, ProcessRequest, run_process
from evalrun.reports_in.json_report import read_json_report
from evalrun.reports_in.parsed import ParsedReport
from evalrun.reports_in.rules import judge
from evalrun.results import EvalResult, Status

OUTPUT_TAIL_CHARS = 4000
# "python" in a manifest's argv means the interpreter evalrun runs under, as in
# nox and tox: a scorer gets the venv that has evalrun's SDK, not whatever
# "python" the PATH happens to find first.
_PYTHON_NAMES = ("python", "python3")


@dataclass(frozen=True)
class Preparation:
    """What the caller decided before an eval starts."""

    env: Mapping[str, str] = field(default_factory=dict)
    skip: str | None = None  # not checked: the reason (an unmet probe, ...)
    fail: str | None = None  # failed before it started (a service that is down, skips = "fail")
    status: Status | None = None  # overrides the status used for ``skip`` (e.g. budget)


Prepare = Callable[[PlannedEval], Preparation]
Finalize = Callable[[PlannedEval, EvalResult], EvalResult]


@dataclass(frozen=True)
class ExecuteRequest:
    evals: list[PlannedEval]
    tier: str
    jobs: int
    base_env: Mapping[str, str]
    grace: float = 2.0
    prepare: Prepare | None = None
    finalize: Finalize | None = None
    on_start: Callable[[str], None] | None = None  # an eval's scorer is about to start
    on_finish: Callable[[EvalResult], None] | None = None


@dataclass
class ExecuteOutcome:
    results: list[EvalResult]
    interrupted: bool


class _Janitor:
    """Removes workdirs that scorers filled, off the workers' critical path."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def remove(self, path: Path) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="evalrun-janitor", daemon=True)
            self._thread.start()
        self._queue.put(path)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()

    def _work(self) -> None:
        while (path := self._queue.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)


class Scratch:
    """One worker's scratch folder: the report path and a workdir that is empty for every eval.

    Making and removing two folders per eval costs more than the rest of the
    bookkeeping on a slow filesystem, so a worker keeps its folder: the report
    is deleted before each eval, and a workdir that a scorer left non-empty (or
    removed) is moved aside for the janitor and replaced by a new, empty one.
    """

    def __init__(self, root: Path, janitor: _Janitor | None = None) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.work = root / "work"
        self.report = root / "report.json"
        self.stdout = root / "stdout"
        self._janitor = janitor
        self._used = 0

    def fresh(self) -> tuple[Path, Path]:
        """An empty workdir and a report path that does not exist yet."""
        self.report.unlink(missing_ok=True)
        self.stdout.unlink(missing_ok=True)
        try:
            clean = not os.listdir(self.work) and self._used > 0
        except OSError:  # not made yet, removed or made unreadable by a scorer
            clean = False
        if not clean:
            self._used += 1
            if self.work.exists() or self.work.is_symlink():
                aside = self.root / f"used-{self._used}"
                os.rename(self.work, aside)
                if self._janitor is not None:
                    self._janitor.remove(aside)
                else:
                    shutil.rmtree(aside, ignore_errors=True)
            self.work.mkdir()
        return self.work, self.report


def execute(request: ExecuteRequest, cancel: threading.Event | None = None) -> ExecuteOutcome:
    """Run every planned eval on ``request.jobs`` worker threads; return results in plan order.

    A KeyboardInterrupt in the calling thread sets ``cancel``: running scorers
    are terminated, those not started are marked interrupted, and the partial
    results come back with ``interrupted=True`` instead of an exception.
    """
    cancel = cancel or threading.Event()
    # Keyed by position: the repeats of one eval (evalrun.repeats) share its name.
    done: dict[int, EvalResult] = {}
    interrupted = False
    scratch = Path(tempfile.mkdtemp(prefix="evalrun-"))
    janitor = _Janitor()
    # Plain queues, not futures: waiting on a set of N futures costs O(N) per
    # completion, which a 500-eval run pays 500 times on a busy machine.
    todo: queue.SimpleQueue[tuple[int, PlannedEval] | None] = queue.SimpleQueue()
    finished: queue.SimpleQueue[tuple[int, EvalResult | BaseException]] = queue.SimpleQueue()
    for item in enumerate(request.evals):
        todo.put(item)
    workers = [
        threading.Thread(
            target=_work,
            args=(todo, finished, request, Scratch(scratch / f"worker-{i}", janitor), cancel),
            name=f"evalrun-eval-{i}",
            daemon=True,
        )
        for i in range(max(1, min(request.jobs, len(request.evals))))
    ]
    for _ in workers:
        todo.put(None)
    try:
        for worker in workers:
            worker.start()
        while len(done) < len(request.evals):
            index, outcome = _next(finished)
            if isinstance(outcome, BaseException):
                raise outcome  # a bug in evalrun, not in a scorer: stop everything
            done[index] = outcome
            if request.on_finish:
                request.on_finish(outcome)
    except KeyboardInterrupt:
        interrupted = True
        cancel.set()
        for worker in workers:
            worker.join()
        while not finished.empty():
            index, outcome = finished.get()
            if isinstance(outcome, EvalResult):
                done.setdefault(index, outcome)
        for index, planned in enumerate(request.evals):
            done.setdefault(index, _unchecked(planned, request.tier, Status.INTERRUPTED, "not run: interrupted"))
    finally:
        for worker in workers:
            worker.join()
        janitor.close()
        shutil.rmtree(scratch, ignore_errors=True)
    ordered = [done[i] for i in range(len(request.evals)) if i in done]
    interrupted = interrupted or any(r.status is Status.INTERRUPTED for r in ordered)
    return ExecuteOutcome(results=ordered, interrupted=interrupted)


def _next(finished: queue.SimpleQueue[tuple[int, EvalResult | BaseException]]) -> tuple[int, EvalResult | BaseException]:
    # A short timeout keeps the wait interruptible by Ctrl-C; get() returns at once when a result is there.
    while True:
        try:
            return finished.get(timeout=0.25)
        except queue.Empty:
            continue


def _work(
    todo: queue.SimpleQueue[tuple[int, PlannedEval] | None],
    finished: queue.SimpleQueue[tuple[int, EvalResult | BaseException]],
    request: ExecuteRequest,
    scratch: Scratch,
    cancel: threading.Event,
) -> None:
    while (item := todo.get()) is not None:
        index, planned = item
        try:
            finished.put((index, _run_one(planned, request, scratch, cancel)))
        except BaseException as exc:  # handed to the main thread, which re-raises it
            finished.put((index, exc))


def _run_one(
    planned: PlannedEval, request: ExecuteRequest, scratch: Scratch, cancel: threading.Event
) -> EvalResult:
    if cancel.is_set():
        return _unchecked(planned, request.tier, Status.INTERRUPTED, "not run: interrupted")
    prep = request.prepare(planned) if request.prepare else Preparation()
    if prep.fail is not None:
        result = _unchecked(planned, request.tier, Status.FAILED, prep.fail)
    elif prep.skip is not None:
        result = _unchecked(planned, request.tier, prep.status or Status.SKIPPED, prep.skip)
    else:
        if request.on_start:
            request.on_start(planned.name)
        result = run_scorer(planned, request.tier, request.base_env, prep.env, scratch, request.grace, cancel)
    if request.finalize:
        result = request.finalize(planned, result)
    return result


def scorer_argv(argv: list[str]) -> tuple[str, ...]:
    if argv[0] in _PYTHON_NAMES:
        return (sys.executable, *argv[1:])
    return tuple(argv)


def run_scorer(
    planned: PlannedEval,
    tier: str,
    base_env: Mapping[str, str],
    extra_env: Mapping[str, str],
    scratch: Scratch,
    grace: float,
    cancel: threading.Event,
) -> EvalResult:
    """Run one scorer to its end and judge it."""
    spec = planned.spec
    workdir, report_path = scratch.fresh()
    stdout_path = scratch.stdout if spec.format == "tap" else None
    env = dict(base_env)
    env.update(extra_env)
    env.update(spec.env)
    env.update(
        EVALRUN_REPORT=str(report_path),
        EVALRUN_EVAL=spec.name,
        EVALRUN_TIER=tier,
        EVALRUN_WORKDIR=str(workdir),
        EVALRUN_REPEAT=str(planned.repeat),  # which run of a repeated eval (0 when it does not repeat)
    )
    if spec.format == "junit" and spec.junit:
        # A report left by an earlier run must never pass for this run's.
        (planned.dir / spec.junit).unlink(missing_ok=True)
    argv = tuple(spec.run) if spec.shell else scorer_argv(spec.run)
    started = time.monotonic()
    outcome = run_process(
        ProcessRequest(
            argv=argv,
            cwd=planned.dir,
            env=env,
            timeout=spec.timeout,
            shell=spec.shell,
            grace=grace,
            stdout_path=stdout_path,
        ),
        cancel,
    )
    return _judge_outcome(planned, tier, outcome, report_path, stdout_path, time.monotonic() - started)


def _judge_outcome(
    planned: PlannedEval,
    tier: str,
    outcome: ProcessOutcome,
    report_path: Path,
    stdout_path: Path | None,
    duration: float,
) -> EvalResult:
    spec = planned.spec
    tail = outcome.text_tail()
    base = dict(
        name=spec.name,
        tier=tier,
        dir=spec.dir,
        duration_s=round(duration, 4),
        exit_code=outcome.exit_code,
        output_tail=tail[-OUTPUT_TAIL_CHARS:],
    )
    if outcome.not_found:
        return EvalResult(status=Status.ERROR, message=outcome.not_found, **base)
    if outcome.cancelled:
        return EvalResult(status=Status.INTERRUPTED, message="interrupted while running; its process group was stopped", **base)
    if outcome.timed_out:
        return EvalResult(
            status=Status.TIMEOUT,
            message=f"timed out after {spec.timeout:g} s; its process group was killed",
            **base,
        )
    parsed: ParsedReport | None = None
    report_error: str | None = None
    try:
        parsed = _read_report(planned, report_path, stdout_path)
    except ReportError as exc:
        report_error = str(exc)
    verdict = judge(parsed, report_error, outcome.exit_code, tail)
    return EvalResult(
        status=verdict.status,
        message=verdict.message,
        checks=verdict.checks,
        metrics=verdict.metrics,
        **base,
    )


def _read_report(planned: PlannedEval, report_path: Path, stdout_path: Path | None) -> ParsedReport:
    spec = planned.spec
    if spec.format == "tap":
        from evalrun.reports_in.tap import parse_tap

        assert stdout_path is not None
        return parse_tap(stdout_path)
    if spec.format == "junit":
        from evalrun.reports_in.junit import parse_junit

        assert spec.junit is not None
        return parse_junit(planned.dir / spec.junit, label=f"{spec.dir}/{spec.junit}")
    return read_json_report(report_path)


def _unchecked(planned: PlannedEval, tier: str, status: Status, message: str) -> EvalResult:
    return EvalResult(name=planned.name, tier=tier, dir=planned.spec.dir, status=status, message=message)


def scorer_base_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment scorers start from: evalrun's own (or ``env``), minus EVALRUN_* run variables.

    EVALRUN_MODEL_URL is kept: it is set by the key policy, not inherited."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not k.startswith("EVALRUN_") or k == "EVALRUN_MODEL_URL"}
