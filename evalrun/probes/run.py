"""Running probes: each distinct probe once, all at the same time, each under its deadline.

An unmet probe is a ``ProbeResult`` with a precise, one-line reason, never an
exception. What a probe is (and every message about a malformed one) lives in
``evalrun.probes.spec``.

Each distinct probe runs once per invocation; all of them run at the same time,
each in its own daemon thread under its own deadline, so a hung service costs
its timeout and nothing more. Reasons never carry a password or the value of a
secret-looking environment variable: DSNs and URLs are shown redacted
(``postgresql://user:***@host/db``) and known secret values are scrubbed.

How each kind is checked lives in ``evalrun.probes.checks``; redaction in
``evalrun.secrets``.
"""

from __future__ import annotations

import importlib
import shlex
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.probes.spec import Probe, Unset, expand
from evalrun.probes.checks import CHECKERS, first_line, seconds
from evalrun.process import terminate_group
from evalrun.secrets import passwords_in, redact_passwords, scrub, secret_like_values

# Slack the watchdog grants beyond a probe's own timeout before it gives up on
# the thread: libraries round timeouts (libpq waits at least 2 s) or apply them
# per phase (httpx: connect, then read), and the user was promised the timeout.
_GRACE_S = 0.5
# The libraries a kind's checker imports: imported before any probe's deadline starts, since on a
# loaded machine importing httpx alone can take longer than a probe's whole timeout.
_LIBRARIES = {"http": "httpx", "postgres": "psycopg"}
# How long an interrupted run waits, at most, for the probe threads to stop their processes
# (each stops within its grace; this only bounds a machine too loaded to schedule them).
_STOP_WAIT_S = 15.0


@dataclass(frozen=True)
class ProbeResult:
    key: str
    ok: bool
    reason: str  # "" when ok; one line naming the probe and the problem when unmet
    duration_s: float


# --------------------------------------------------------------------------- running


def check_probe(probe: Probe, env: Mapping[str, str], root: Path) -> ProbeResult:
    """Check one probe under its deadline (also used to poll a service's readiness)."""
    return run_probes([probe], env, root)[probe.key]


def run_probes(probes: Iterable[Probe], env: Mapping[str, str], root: Path,
               secrets: Iterable[str] | None = None) -> dict[str, ProbeResult]:
    """Check each distinct probe once, all at the same time; results keyed by ``Probe.key``.

    ``secrets``: the run's (``evalrun.run.context.RunContext``), scrubbed from every reason; without them, the
    secret-looking values of ``env``.
    """
    distinct: dict[str, Probe] = {}
    for probe in probes:
        distinct.setdefault(probe.key, probe)
    frozen_env = dict(env)
    _import_libraries(distinct.values())
    cancel = ProbeCancel()
    known = list(secrets) if secrets is not None else secret_like_values(frozen_env)
    watches = [_Watch(probe, frozen_env, root, cancel, known) for probe in distinct.values()]
    try:
        for watch in watches:
            watch.thread.start()
        return {watch.probe.key: watch.wait() for watch in watches}
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM while probing: stop the probes' own processes before the run ends.
        cancel.set()
        until = time.monotonic() + _STOP_WAIT_S
        for watch in watches:
            watch.thread.join(max(0.0, until - time.monotonic()))
        # A thread that the machine did not schedule in time must not leave its process behind.
        for pgid in list(cancel.spawned):
            terminate_group(pgid, 0.2)
        raise


def _import_libraries(probes: Iterable[Probe]) -> None:
    for name in sorted({_LIBRARIES[p.kind] for p in probes if p.kind in _LIBRARIES}):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # the checker's own import names what is missing


class ProbeCancel(threading.Event):
    """The run's cancel event for its probes, with the process groups they started (to stop on Ctrl-C)."""

    def __init__(self) -> None:
        super().__init__()
        self.spawned: set[int] = set()


class _Watch:
    """A probe running in a daemon thread; a thread past its deadline is abandoned, never joined."""

    def __init__(self, probe: Probe, env: dict[str, str], root: Path, cancel: threading.Event,
                 secrets: list[str]) -> None:
        self.probe = probe
        self.secrets = secrets
        self.cancel = cancel
        self.result: ProbeResult | None = None
        self.started = time.monotonic()
        self.thread = threading.Thread(
            target=self._run, args=(env, root), name=f"probe {probe.key}", daemon=True
        )

    def _run(self, env: dict[str, str], root: Path) -> None:
        self.result = _check(self.probe, env, root, self.started, self.cancel, self.secrets)

    def wait(self) -> ProbeResult:
        deadline = self.started + self.probe.timeout + _GRACE_S
        self.thread.join(max(0.0, deadline - time.monotonic()))
        if self.result is not None:
            return self.result
        probe = self.probe
        where = f"{probe.kind} {probe.name}" if probe.name else _prefix(probe, None)
        return ProbeResult(
            probe.key, False, f"{where}: no answer after {seconds(probe.timeout)} s", time.monotonic() - self.started
        )


def _check(probe: Probe, env: Mapping[str, str], root: Path, started: float, cancel: threading.Event,
           known: list[str]) -> ProbeResult:
    secrets = list(known)
    try:
        target = probe.target if probe.kind == "env" else expand(probe.target, env)
    except Unset as unset:
        needed_by = f"probe {probe.name}" if probe.name else probe.key
        reason = f"{unset.var} is {unset.state} (needed by {needed_by})"
        return ProbeResult(probe.key, False, reason, time.monotonic() - started)
    secrets += passwords_in(target)
    try:
        problem = CHECKERS[probe.kind](probe, target, env, root, cancel)
    except Exception as exc:  # a probe reports, it never crashes the run
        problem = f"probe failed unexpectedly: {type(exc).__name__}: {first_line(str(exc))}"
    duration = time.monotonic() - started
    if problem is None:
        return ProbeResult(probe.key, True, "", duration)
    if probe.kind == "env":
        reason = f"env {probe.name}: {target} {problem}" if probe.name else f"env {target} {problem}"
    elif probe.name:
        reason = f"{probe.kind} {probe.name}: {problem} ({_show(target)})"
    else:
        reason = f"{_prefix(probe, target)}: {problem}"
    return ProbeResult(probe.key, False, scrub(reason, secrets, "***"), duration)


def _prefix(probe: Probe, expanded: Any) -> str:
    """Inline probes are named by kind and target: ``tcp 127.0.0.1:5432``."""
    return f"{probe.kind} {_show(expanded if expanded is not None else probe.target)}"


def _show(target: Any) -> str:
    text = shlex.join(target) if isinstance(target, tuple) else str(target)
    return redact_passwords(text)


