"""Running the planned evals: one scorer subprocess each, ``-j`` at a time.

This module owns running one eval: what the caller decided before it starts
(``Preparation``), the scorer's environment (``EVALRUN_*``; ``NO_COLOR=1`` and
``FORCE_COLOR=0`` unless its env sets either), starting it in a
fresh workdir with a pidfile of its group so a later run can stop it, and handing
the outcome to ``evalrun.run.outcome`` to be judged; on Ctrl-C every eval that
did not finish is marked interrupted. The threads are ``evalrun.run.pool``'s, the
scratch folders ``evalrun.scratch``'s.

Preconditions, services and the model proxy are not this module's business: the
caller passes a ``prepare`` hook that returns extra environment or the reason an
eval must not run, and a ``finalize`` hook that may amend a result.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from evalrun.leftovers import PidfileSlot, scorer_pidfile
from evalrun.manifest import EvalSpec
from evalrun.run.outcome import INSPECT_LOG_DIR_NAME, judge_outcome, note_escaped
from evalrun.plan import PlannedEval
from evalrun.run.pool import run_pool
from evalrun.process import CancelEvent, ProcessOutcome, ProcessRequest, resolve_program, run_process
from evalrun.reports_in.parsed import REPORT_LIMIT
from evalrun.results import EvalResult, Status
from evalrun.scratch import Janitor, Scratch, drop_scratch, make_scratch, sweep_scratch
from evalrun.models.scorer_env import model_endpoint_wins
from evalrun.secrets import PLACEHOLDER



@dataclass(frozen=True)
class Preparation:
    """What the caller decided before an eval starts."""

    env: Mapping[str, str] = field(default_factory=dict)
    skip: str | None = None  # not checked: the reason (an unmet probe, ...)
    fail: str | None = None  # failed before it started (a service that is down, skips = "fail")
    status: Status | None = None  # overrides the status used for ``skip`` (e.g. budget)


Prepare = Callable[[PlannedEval], Preparation]
Finalize = Callable[[PlannedEval, EvalResult], EvalResult]


class ExecuteRequest(NamedTuple):
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
    # Where running scorers' pidfiles go (pid, group, start time), so the next
    # run stops what a SIGKILLed one left (``evalrun.leftovers``). None: none written.
    pidfile_dir: Path | None = None
    # The positions of ``evals`` in the order to start them (longest first); None: plan order. Results stay in plan order.
    order: Sequence[int] | None = None
    # The isolation fallback (evalrun.sandbox.Sandbox): every scorer starts from its restricted thread.
    sandbox: Any = None


@dataclass
class ExecuteOutcome:
    results: list[EvalResult]
    interrupted: bool


def execute(request: ExecuteRequest, cancel: threading.Event | None = None) -> ExecuteOutcome:
    """Run every planned eval on ``request.jobs`` worker threads; return results in plan order.

    A KeyboardInterrupt in the calling thread sets ``cancel``: running scorers
    are terminated, those not started are marked interrupted, and the partial
    results come back with ``interrupted=True`` instead of an exception.
    """
    own_cancel = CancelEvent() if cancel is None else None  # wakes the running scorers' supervisors when set
    cancel = cancel or own_cancel
    assert cancel is not None
    sweep_scratch()  # what SIGKILLed runs left; a live run's scratch is never touched
    folders: list[Path] = []
    slots: list[PidfileSlot] = []  # each worker's scorers' pidfile
    janitor = Janitor()
    fixed_reports = FixedReports()
    placeholders = placeholder_env(request.base_env)  # the same for every eval: worked out once

    def make_worker(i: int) -> Callable[[PlannedEval], EvalResult]:
        # Each worker's scratch is a folder of its own in the temporary folder, not a subfolder of one the
        # workers share: a scorer that removes the folders above its $EVALRUN_WORKDIR takes out its own
        # report, never the report of the eval running beside it.
        folders.append(make_scratch())
        own = Scratch(folders[-1], janitor)
        slot = None
        if request.pidfile_dir is not None:
            slot = PidfileSlot(scorer_pidfile(request.pidfile_dir))
            slots.append(slot)
        return lambda planned: _run_one(planned, request, own, cancel, fixed_reports, placeholders, slot)

    try:
        # Keyed by position: the repeats of one eval (evalrun.repeats) share its name.
        order = list(request.order) if request.order is not None else list(range(len(request.evals)))
        pooled = run_pool([request.evals[i] for i in order], request.jobs, make_worker, cancel=cancel,
                          on_result=request.on_finish)
    finally:
        for slot in slots:  # a slot whose scorer may still run (a second Ctrl-C) keeps its record
            slot.close()
        janitor.close()
        for folder in folders:
            drop_scratch(folder)
        if own_cancel is not None:
            own_cancel.close()
    done = {order[position]: result for position, result in pooled.done.items()}
    if pooled.interrupted:
        for index, planned in enumerate(request.evals):
            done.setdefault(index, _unchecked(planned, request.tier, Status.INTERRUPTED, "not run: interrupted"))
    ordered = [done[i] for i in range(len(request.evals)) if i in done]
    interrupted = pooled.interrupted or any(r.status is Status.INTERRUPTED for r in ordered)
    return ExecuteOutcome(results=ordered, interrupted=interrupted)


def _run_one(
    planned: PlannedEval, request: ExecuteRequest, scratch: Scratch, cancel: threading.Event,
    fixed_reports: FixedReports | None = None, placeholders: Mapping[str, str] | None = None,
    slot: PidfileSlot | None = None,
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
            planned, request.tier, request.base_env, prep.env, scratch, request.grace, cancel, request.pidfile_dir,
            secrets=request.secrets, sandbox=request.sandbox, fixed_reports=fixed_reports, placeholders=placeholders,
            slot=slot,
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
    pidfile_dir: Path | None = None,
    *,
    secrets: frozenset[str] = frozenset(),
    sandbox: Any = None,
    fixed_reports: FixedReports | None = None,
    placeholders: Mapping[str, str] | None = None,
    slot: PidfileSlot | None = None,
) -> EvalResult:
    """Run one scorer to its end and judge it; while it runs, its group has a pidfile in ``pidfile_dir``.

    ``fixed_reports``: the run's turns at the report paths its evals share (``FixedReports``).
    ``placeholders``: ``placeholder_env(base_env)``, when the caller worked it out once for every eval.
    ``slot``: the worker's ``PidfileSlot``, its record in place of a pidfile of its own in ``pidfile_dir``.

    ``sandbox`` (``evalrun.sandbox.Sandbox``): the scorer starts from its restricted thread."""
    spec = planned.spec
    workdir, report_path = scratch.fresh()
    stdout_path = scratch.stdout if spec.format == "tap" else None
    env = dict(base_env)
    env.update(extra_env)
    own_env = planned.env()  # the eval's env, its experiment's over it
    if not COLOR_VARIABLES & own_env.keys():
        # Scorer output is captured into files and shown in -v and the results: colour codes only bury it.
        # The eval's env says otherwise by setting either variable (then evalrun sets neither).
        env.update(NO_COLOR="1", FORCE_COLOR="0")
    env.update(own_env)
    # The tier's key rule wins over anything an eval or service sets: in t1/t2 the
    # key variables keep the placeholder the base environment gave them.
    env.update(placeholder_env(base_env) if placeholders is None else placeholders)
    model_endpoint_wins(env, extra_env)  # the scorer talks to the proxy, whatever its env says
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
    fixed = fixed_report(planned)
    with (fixed_reports or FixedReports()).hold(fixed, cancel) as turn:
        if not turn:  # interrupted while another run of the same report path ran
            return _unchecked(planned, tier, Status.INTERRUPTED, "not run: interrupted")
        if fixed is not None:
            # A report left by an earlier run must never pass for this run's.
            try:
                fixed.unlink(missing_ok=True)
            except IsADirectoryError:
                pass  # a folder is never removed here: reading it says "is a directory", failing this eval alone
        argv = tuple(spec.run)
        started = time.monotonic()
        own_slot = slot is None and pidfile_dir is not None  # a scorer run alone: a slot of its own, for it only
        if own_slot:
            slot = PidfileSlot(scorer_pidfile(pidfile_dir))
        try:
            outcome = _run_tracked(planned, argv, env, spec, stdout_path, grace, cancel, sandbox, slot)
        finally:
            if slot is not None:
                slot.blank()  # its group is gone
                if own_slot:
                    slot.close()
        result = judge_outcome(
            planned, tier, outcome, report_path, stdout_path, time.monotonic() - started, secrets=secrets, workdir=workdir
        )
    return note_escaped(result, outcome)


def fixed_report(planned: PlannedEval) -> Path | None:
    """Where this run's report is read from when it is not a path of its own: the fixed path in the eval's folder.

    ``json``, ``tap`` and ``inspect`` reports go to this run's own scratch ($EVALRUN_REPORT, its stdout,
    $INSPECT_LOG_DIR); ``junit``, ``pytest-reportlog`` and ``promptfoo`` name a path in the eval's folder
    that every run of the eval (its repeats, its experiment cells) writes. Those runs take turns
    (``FixedReports``), so each is judged on its own report.
    """
    spec = planned.spec
    name = {"junit": spec.junit, "pytest-reportlog": spec.reportlog, "promptfoo": spec.promptfoo}.get(spec.format)
    return Path(os.path.abspath(planned.dir / name)) if name else None


class FixedReports:
    """One turn at a time per fixed report path: from removing the old report to reading the new one.

    Two runs that write the same file at once (two repeats of one eval on two ``-j`` workers, two
    experiment cells, two evals of one folder naming one report) would each read whichever run wrote
    last. Runs with reports of their own never wait.
    """

    def __init__(self) -> None:
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, path: Path | None, cancel: threading.Event) -> Iterator[bool]:
        """Yield True once this run has the path to itself (at once when ``path`` is None); False if cancelled."""
        if path is None:
            yield True
            return
        with self._guard:
            lock = self._locks.setdefault(os.path.realpath(path), threading.Lock())
        while not lock.acquire(timeout=0.1):  # a short wait: Ctrl-C is seen while another run holds the path
            if cancel.is_set():
                yield False
                return
        try:
            yield True
        finally:
            lock.release()


COLOR_VARIABLES = frozenset({"NO_COLOR", "FORCE_COLOR"})


def placeholder_env(base_env: Mapping[str, str]) -> dict[str, str]:
    """The key variables the base environment gives the placeholder (t1/t2): set over every eval's own env."""
    return {name: value for name, value in base_env.items() if value == PLACEHOLDER}



def program_problem(planned: PlannedEval, environ: Mapping[str, str]) -> str | None:
    """``program not found: pyhton``: the eval's program looked up as its run would look it up, without running it.

    A bare name on the PATH of the eval's environment (``environ`` with the eval's and its column's ``env``
    over it), a name with a slash as a file relative to the eval's folder; a ``shell = true`` eval's program is
    the shell's to find. ``evalrun dry`` and ``evalrun check`` say it before a run fails on it.
    """
    spec = planned.spec
    if spec.shell or not spec.run:
        return None
    env = dict(environ)
    env.update(planned.env())
    _, problem = resolve_program(spec.run[0], planned.dir, env)
    return problem or None


def _run_tracked(
    planned: PlannedEval,
    argv: tuple[str, ...],
    env: Mapping[str, str],
    spec: EvalSpec,
    stdout_path: Path | None,
    grace: float,
    cancel: threading.Event,
    sandbox: Any = None,
    slot: PidfileSlot | None = None,
) -> ProcessOutcome:
    def remember(pid: int, start: int | None) -> None:
        if slot is None:
            return
        try:
            try:
                slot.write(planned.name, pid, start=start)
            except FileNotFoundError:  # the state folder is made by the first scorer (or again, if one removed it)
                slot.path.parent.mkdir(parents=True, exist_ok=True)
                slot.write(planned.name, pid, start=start)
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
            sandbox=sandbox,
        ),
        cancel,
        on_spawned=remember,
    )


def _unchecked(planned: PlannedEval, tier: str, status: Status, message: str) -> EvalResult:
    return EvalResult(
        name=planned.name, experiment=planned.experiment, tier=tier, dir=planned.spec.dir, status=status, message=message
    )


def scorer_base_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment scorers start from: evalrun's own (or ``env``), minus EVALRUN_* run variables.

    EVALRUN_MODEL_URL is kept: it is set by the key policy, not inherited."""
    source = os.environ if env is None else env
    return {k: v for k, v in source.items() if not k.startswith("EVALRUN_") or k == "EVALRUN_MODEL_URL"}
