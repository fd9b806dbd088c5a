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

import itertools
import os
import queue
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalrun.errors import ReportError
from evalrun.leftovers import make_scratch, sweep_scratch, write_record
from evalrun.manifest import EvalSpec
from evalrun.plan import PlannedEval
from evalrun.process import ProcessOutcome, ProcessRequest, run_process
from evalrun.reports_in.json_report import read_json_report
from evalrun.reports_in.parsed import REPORT_LIMIT, ParsedReport
from evalrun.reports_in.rules import judge
from evalrun.results import CheckResult, EvalResult, SkippedTest, Status
from evalrun.secrets import PLACEHOLDER
from evalrun.text import one_line, shorten

INSPECT_LOG_DIR_NAME = "inspect-logs"  # format = "inspect": INSPECT_LOG_DIR is this folder of the workdir

OUTPUT_TAIL_CHARS = 4000


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
    secrets: frozenset[str] = frozenset()  # scrubbed from reports before anything in them is cut
    on_finish: Callable[[EvalResult], None] | None = None
    # Where running scorers are recorded (pid, group, start time), so the next
    # run stops what a SIGKILLed one left (``evalrun.leftovers``). None: not recorded.
    record_dir: Path | None = None


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
        """An empty workdir and a report path that does not exist yet.

        The last scorer may have removed this folder (or the whole scratch
        folder), replaced it with a file or a symlink, or left a directory at
        the report path: whatever it did, the next eval gets a clean start.
        """
        self._restore_root()
        for leftover in (self.report, self.stdout):
            self._discard(leftover)
        try:
            # lstat: a symlink put in the workdir's place is never handed to the next scorer.
            clean = stat.S_ISDIR(os.lstat(self.work).st_mode) and not os.listdir(self.work) and self._used > 0
        except OSError:  # not made yet, removed or made unreadable by a scorer
            clean = False
        if not clean:
            self._used += 1
            self._discard(self.work)
            self.work.mkdir()
        return self.work, self.report

    def _discard(self, path: Path) -> None:
        """Clear ``path``: a file or link is unlinked, a folder moved aside for the janitor.

        Moving into a new, empty folder of our own cannot fail on whatever the
        scorer left (a non-empty ``used-N``, unreadable subfolders), where
        removing in place could.
        """
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(mode):
            path.unlink(missing_ok=True)
            return
        aside = Path(tempfile.mkdtemp(prefix="used-", dir=self.root))
        os.rename(path, aside / path.name)
        if self._janitor is not None:
            self._janitor.remove(aside)
        else:
            shutil.rmtree(aside, ignore_errors=True)

    def _restore_root(self) -> None:
        try:
            if stat.S_ISDIR(os.lstat(self.root).st_mode):
                return
            self.root.unlink()  # a file or symlink put in its place: never followed
        except FileNotFoundError:
            pass
        self.root.mkdir(parents=True, exist_ok=True)


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
    sweep_scratch()  # what SIGKILLed runs left; a live run's scratch is never touched
    scratch = make_scratch()
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
        result = run_scorer(
            planned, request.tier, request.base_env, prep.env, scratch, request.grace, cancel, request.record_dir,
            secrets=request.secrets,
        )
    if request.finalize:
        result = request.finalize(planned, result)
    return result


def run_scorer(
    planned: PlannedEval,
    tier: str,
    base_env: Mapping[str, str],
    extra_env: Mapping[str, str],
    scratch: Scratch,
    grace: float,
    cancel: threading.Event,
    record_dir: Path | None = None,
    *,
    secrets: frozenset[str] = frozenset(),
) -> EvalResult:
    """Run one scorer to its end and judge it; while it runs, its group is recorded in ``record_dir``."""
    spec = planned.spec
    workdir, report_path = scratch.fresh()
    stdout_path = scratch.stdout if spec.format == "tap" else None
    env = dict(base_env)
    env.update(extra_env)
    env.update(planned.env())  # the eval's env, its experiment's over it
    # The tier's key rule wins over anything an eval or service sets: in t1/t2 the
    # key variables keep the placeholder the base environment gave them.
    env.update({name: value for name, value in base_env.items() if value == PLACEHOLDER})
    env.update(
        EVALRUN_REPORT=str(report_path),
        EVALRUN_EVAL=spec.name,  # the eval's own name; the column is EVALRUN_EXPERIMENT
        EVALRUN_TIER=tier,
        EVALRUN_WORKDIR=str(workdir),
        EVALRUN_REPEAT=str(planned.repeat),  # which run of a repeated eval (0 when it does not repeat)
    )
    if planned.experiment is not None:
        env["EVALRUN_EXPERIMENT"] = planned.experiment
        if planned.column is not None and planned.column.model:
            env["EVALRUN_MODEL"] = planned.column.model
    if spec.format == "inspect":
        # A fresh folder of this run's own: no log of an earlier run can pass for this one's.
        env["INSPECT_LOG_DIR"] = str(workdir / INSPECT_LOG_DIR_NAME)
    left_report = {"junit": spec.junit, "pytest-reportlog": spec.reportlog, "promptfoo": spec.promptfoo}.get(spec.format)
    if left_report:
        # A report left by an earlier run must never pass for this run's.
        try:
            (planned.dir / left_report).unlink(missing_ok=True)
        except IsADirectoryError:
            pass  # a folder is never removed here: reading it says "is a directory", failing this eval alone
    argv = tuple(spec.run)
    started = time.monotonic()
    record = record_dir / f"scorer.{os.getpid()}.{next(_record_numbers)}.json" if record_dir is not None else None
    try:
        outcome = _run_recorded(planned, argv, env, spec, stdout_path, grace, cancel, record)
    finally:
        if record is not None:
            record.unlink(missing_ok=True)
    result = _judge_outcome(
        planned, tier, outcome, report_path, stdout_path, time.monotonic() - started, secrets=secrets, workdir=workdir
    )
    return _noting_escaped(result, outcome)


_record_numbers = itertools.count()


def _run_recorded(
    planned: PlannedEval,
    argv: tuple[str, ...],
    env: Mapping[str, str],
    spec: EvalSpec,
    stdout_path: Path | None,
    grace: float,
    cancel: threading.Event,
    record: Path | None,
) -> ProcessOutcome:
    def remember(pid: int) -> None:
        if record is None:
            return
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            write_record(record, planned.name, "scorer", pid, pid, None)
        except OSError:
            pass  # an unwritable state folder costs the sweep after a kill, not the eval

    return run_process(
        ProcessRequest(
            argv=argv,
            cwd=planned.dir,
            env=env,
            timeout=spec.timeout,
            shell=spec.shell,
            grace=grace,
            stdout_path=stdout_path,
            stdout_limit=REPORT_LIMIT + 1,  # what a TAP report is read up to, and one byte to tell it is more
        ),
        cancel,
        on_spawn=remember,
    )


def _noting_escaped(result: EvalResult, outcome: ProcessOutcome) -> EvalResult:
    """Not a verdict on what it checked; said, so a scorer that daemonizes is fixed, not stopped in every run."""
    if not outcome.escaped:
        return result
    note = f"it left {', '.join(outcome.escaped)} running outside its process group, holding its output; evalrun stopped it"
    return result.model_copy(update={"message": f"{result.message}; {note}" if result.message else note})


def _judge_outcome(
    planned: PlannedEval,
    tier: str,
    outcome: ProcessOutcome,
    report_path: Path,
    stdout_path: Path | None,
    duration: float,
    *,
    secrets: frozenset[str] = frozenset(),
    workdir: Path | None = None,
) -> EvalResult:
    spec = planned.spec
    tail = outcome.text_tail()
    base = dict(
        name=planned.name,
        experiment=planned.experiment,
        tier=tier,
        dir=spec.dir,
        duration_s=round(duration, 4),
        exit_code=outcome.exit_code,
        output_tail=tail[-OUTPUT_TAIL_CHARS:],
    )
    if outcome.not_found:
        return EvalResult(status=Status.ERROR, message=outcome.not_found, **base)
    if outcome.cancelled:
        return _stopped(planned, report_path, Status.INTERRUPTED, "interrupted while running",
                        "its process group was stopped", base)
    if outcome.timed_out:
        return _stopped(planned, report_path, Status.TIMEOUT, f"timed out after {spec.timeout:g} s",
                        "its process group was killed", base)
    parsed: ParsedReport | None = None
    report_error: str | None = None
    try:
        if outcome.stdout_path_error:  # a TAP stream cut short is no report: say why, never judge the stub
            report_error = f"invalid report: the scorer's stdout could not be saved ({outcome.stdout_path_error})"
        else:
            try:
                parsed = _read_report(planned, report_path, stdout_path, outcome, secrets, workdir)
            except ReportError as exc:
                report_error = str(exc)
        verdict = judge(parsed, report_error, outcome.exit_code, tail, planned.dir, spec.dir)
    except Exception as exc:  # noqa: BLE001 - whatever a report does to evalrun fails this eval, never the run
        why = one_line(f"{type(exc).__name__}: {exc}", 200)
        return EvalResult(status=Status.ERROR, message=f"invalid report: evalrun could not judge it ({why})", **base)
    return EvalResult(
        status=verdict.status,
        message=verdict.message,
        checks=verdict.checks,
        metrics=verdict.metrics,
        skipped_tests=[SkippedTest(name=s.name, reason=s.reason) for s in verdict.skips],
        **base,
    )


def _stopped(
    planned: PlannedEval, report_path: Path, status: Status, what: str, how: str, base: dict[str, Any]
) -> EvalResult:
    """A scorer we stopped: keep the checks its SDK report already holds, marked partial,
    and name the check it was in, if the report says."""
    partial: ParsedReport | None = None
    if planned.spec.format == "json":
        try:
            partial = read_json_report(report_path)
        except ReportError:
            partial = None  # nothing written yet, or torn beyond use: nothing to keep
    if partial is None:
        return EvalResult(status=status, message=f"{what}; {how}", **base)
    running = partial.running if isinstance(partial.running, str) and partial.running else None
    checks = list(partial.checks)
    where = ""
    if running is not None:
        where = f' during check "{running}"'
        if running not in {c.name for c in checks}:
            checks.append(CheckResult(name=running, assertions=0, passed=False, message=f"did not finish: {what}"))
    finished = len(partial.checks)
    kept = f"kept the {finished} check{'s' if finished != 1 else ''} it finished (partial)"
    return EvalResult(
        status=status,
        message=shorten(f"{what.removesuffix(' while running') + where if where else what}; {how}; {kept}"),
        checks=checks,
        metrics=partial.metrics,
        partial=True,
        **base,
    )


def _read_report(
    planned: PlannedEval,
    report_path: Path,
    stdout_path: Path | None,
    outcome: ProcessOutcome,
    secrets: frozenset[str],
    workdir: Path | None,
) -> ParsedReport:
    spec = planned.spec
    if spec.format == "tap":
        from evalrun.reports_in.tap import parse_tap

        assert stdout_path is not None
        # Test::More prints a failed point's got/expected on stderr: the tail is where to find it.
        stderr = outcome.stderr_tail.decode("utf-8", errors="replace")
        return parse_tap(stdout_path, stderr=stderr, secrets=secrets)
    if spec.format == "junit":
        from evalrun.reports_in.junit import parse_junit

        assert spec.junit is not None
        return parse_junit(planned.dir / spec.junit, label=f"{spec.dir}/{spec.junit}", secrets=secrets)
    if spec.format == "pytest-reportlog":
        from evalrun.reports_in.reportlog import parse_reportlog

        assert spec.reportlog is not None
        return parse_reportlog(planned.dir / spec.reportlog, label=f"{spec.dir}/{spec.reportlog}", secrets=secrets)
    if spec.format == "inspect":
        from evalrun.reports_in.inspect_log import parse_inspect

        assert workdir is not None
        return parse_inspect(workdir / INSPECT_LOG_DIR_NAME, "$INSPECT_LOG_DIR", secrets=secrets)
    if spec.format == "promptfoo":
        from evalrun.reports_in.promptfoo import parse_promptfoo

        assert spec.promptfoo is not None
        return parse_promptfoo(planned.dir / spec.promptfoo, label=f"{spec.dir}/{spec.promptfoo}", secrets=secrets)
    return read_json_report(report_path, secrets=secrets)


def _unchecked(planned: PlannedEval, tier: str, status: Status, message: str) -> EvalResult:
    return EvalResult(
        name=planned.name, experiment=planned.experiment, tier=tier, dir=planned.spec.dir, status=status, message=message
    )


def scorer_base_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment scorers start from: evalrun's own (or ``env``), minus EVALRUN_* run variables.

    EVALRUN_MODEL_URL is kept: it is set by the key policy, not inherited."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not k.startswith("EVALRUN_") or k == "EVALRUN_MODEL_URL"}
