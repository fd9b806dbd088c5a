"""Preconditions: what an eval or a tier needs before it may run.

This module owns probe requirements — named ``[probes.NAME]`` tables and inline
shorthand such as ``env:OPENAI_API_KEY`` or ``tcp:127.0.0.1:5432`` — from
parsing (a bad table is a ``ManifestError``) to checking (an unmet probe is a
``ProbeResult`` with a precise, one-line reason, never an exception).

Each distinct probe runs once per invocation; all of them run at the same time,
each in its own daemon thread under its own deadline, so a hung service costs
its timeout and nothing more. Reasons never carry a password or the value of a
secret-looking environment variable: DSNs and URLs are shown redacted
(``postgresql://user:***@host/db``) and known secret values are scrubbed.

How each kind is checked lives in ``evalrun.probes.checks``; redaction in
``evalrun.secrets``.
"""

from __future__ import annotations

import math
import re
import shlex
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalrun.errors import ManifestError, file_label
from evalrun.manifest import INLINE_PROBE_KINDS, Manifest
from evalrun.probes.checks import CHECKERS, MODULE_NAME, first_line, seconds, split_host_port
from evalrun.secrets import passwords_in, redact_passwords, scrub, secret_like_values

KINDS = INLINE_PROBE_KINDS
DEFAULT_PROBE_TIMEOUT = 2.0
_TABLE_KEYS = ("timeout", "expect_json")
# Slack the watchdog grants beyond a probe's own timeout before it gives up on
# the thread: libraries round timeouts (libpq waits at least 2 s) or apply them
# per phase (httpx: connect, then read), and the user was promised the timeout.
_GRACE_S = 0.5
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Probe:
    """One precondition, parsed but not expanded: ``${VAR}`` is resolved when it runs."""

    key: str  # the requirement as written ("db", "env:OPENAI_API_KEY"); the dedupe key
    name: str | None  # a named probe's name; None for inline shorthand
    kind: str  # one of KINDS
    target: Any  # str, or a tuple of argv words for ``command``
    timeout: float = DEFAULT_PROBE_TIMEOUT
    expect_json: dict[str, Any] | None = None


@dataclass(frozen=True)
class ProbeResult:
    key: str
    ok: bool
    reason: str  # "" when ok; one line naming the probe and the problem when unmet
    duration_s: float


# --------------------------------------------------------------------------- parsing


def parse_probe(manifest: Manifest, requirement: str) -> Probe:
    """Turn a ``requires`` entry into a Probe; raise ManifestError if it is malformed."""
    return _parse(manifest, requirement, "requires")


def validate_probes(manifest: Manifest) -> None:
    """Parse every named probe and every requirement, raising on the first problem."""
    for name in manifest.probes:
        _parse(manifest, name, f"probes.{name}")
    for index, spec in enumerate(manifest.evals):
        for req in spec.requires:
            _parse(manifest, req, f'evals[{index}] ("{spec.name}").requires')
    for tier_name, tier in manifest.tiers.items():
        for req in tier.require:
            _parse(manifest, req, f"tiers.{tier_name}.require")


def _parse(manifest: Manifest, requirement: str, where: str) -> Probe:
    label = file_label(manifest.path)
    if requirement in manifest.probes:
        return _parse_table(f"{label}: probes.{requirement}", requirement, manifest.probes[requirement])
    kind, sep, rest = requirement.partition(":")
    if not sep or not rest or kind not in KINDS:
        raise ManifestError(
            f"{label}: {where}: unknown probe {requirement!r}; define [probes.{requirement}] "
            f"or use one of {', '.join(k + ':' for k in KINDS)}"
        )
    place = f"{label}: {where}: {requirement!r}"
    target: Any = rest
    if kind in ("http", "postgres") and rest.startswith("//"):
        target = requirement  # written as a bare URL: "http://host/health", "postgres://host/db"
    elif kind == "http" and "://" not in rest and not rest.startswith("${"):
        target = "http://" + rest
    elif kind == "command":
        try:
            target = tuple(shlex.split(rest))
        except ValueError as exc:
            raise ManifestError(f"{place}: cannot split into words ({exc}); balance the quotes") from None
    _check_target(kind, target, place)
    return Probe(key=requirement, name=None, kind=kind, target=target)


def _parse_table(where: str, name: str, table: Mapping[str, Any]) -> Probe:
    unknown = [k for k in table if k not in KINDS and k not in _TABLE_KEYS]
    if unknown:
        raise ManifestError(
            f"{where}.{unknown[0]}: unknown key; a probe has one kind key ({', '.join(KINDS)}), "
            f"an optional timeout and, for http, expect_json"
        )
    kinds = [k for k in table if k in KINDS]
    if not kinds:
        raise ManifestError(
            f'{where}: no probe kind; add exactly one of {", ".join(KINDS)}, e.g. postgres = "${{DATABASE_URL}}"'
        )
    if len(kinds) > 1:
        raise ManifestError(f"{where}: has {' and '.join(kinds)}; a probe checks one thing, split it into two probes")
    kind = kinds[0]
    timeout = table.get("timeout", DEFAULT_PROBE_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise ManifestError(f"{where}.timeout: must be a number of seconds > 0, e.g. timeout = 2.5")
    expect = table.get("expect_json")
    if expect is not None:
        if kind != "http":
            raise ManifestError(f"{where}.expect_json: only http probes take expect_json; remove it")
        if not isinstance(expect, dict) or not expect:
            raise ManifestError(
                f"{where}.expect_json: must be a table of field = value, e.g. expect_json = {{ replayMode = true }}"
            )
    target = table[kind]
    if kind == "command":
        if not isinstance(target, list) or not target or not all(isinstance(w, str) and w for w in target):
            raise ManifestError(
                f'{where}.command: must be a non-empty array of argv words, e.g. command = ["pg_isready", "-q"]'
            )
        target = tuple(target)
    elif not isinstance(target, str) or not target:
        raise ManifestError(f"{where}.{kind}: must be a non-empty string")
    _check_target(kind, target, f"{where}.{kind}")
    return Probe(key=name, name=name, kind=kind, target=target, timeout=float(timeout), expect_json=expect)


def _check_target(kind: str, target: Any, place: str) -> None:
    """Reject targets that can never work; ones with ``${VAR}`` are checked after expansion."""
    if kind == "env" and not _ENV_NAME.match(target):
        raise ManifestError(f"{place}: {target!r} is not a variable name; write env:NAME, e.g. env:OPENAI_API_KEY")
    if kind == "command" and not target:
        raise ManifestError(f"{place}: no command; write command:PROGRAM ARGS")
    if _has_var(target):
        return
    if kind == "tcp":
        problem = split_host_port(target)[2]
        if problem:
            raise ManifestError(f"{place}: {problem}")
    elif kind == "http":
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ManifestError(f"{place}: not an http(s) URL; write e.g. http://127.0.0.1:8000/health")
    elif kind == "python" and not MODULE_NAME.match(target):
        raise ManifestError(f"{place}: {target!r} is not a module name; write e.g. python:yaml")


def _has_var(target: Any) -> bool:
    words = target if isinstance(target, tuple) else (target,)
    return any(_VAR.search(w) for w in words)


# --------------------------------------------------------------------------- running


def check_probe(probe: Probe, env: Mapping[str, str], root: Path) -> ProbeResult:
    """Check one probe under its deadline (also used to poll a service's readiness)."""
    return run_probes([probe], env, root)[probe.key]


def run_probes(probes: Iterable[Probe], env: Mapping[str, str], root: Path) -> dict[str, ProbeResult]:
    """Check each distinct probe once, all at the same time; results keyed by ``Probe.key``."""
    distinct: dict[str, Probe] = {}
    for probe in probes:
        distinct.setdefault(probe.key, probe)
    frozen_env = dict(env)
    watches = [_Watch(probe, frozen_env, root) for probe in distinct.values()]
    for watch in watches:
        watch.thread.start()
    return {watch.probe.key: watch.wait() for watch in watches}


class _Watch:
    """A probe running in a daemon thread; a thread past its deadline is abandoned, never joined."""

    def __init__(self, probe: Probe, env: dict[str, str], root: Path) -> None:
        self.probe = probe
        self.result: ProbeResult | None = None
        self.started = time.monotonic()
        self.thread = threading.Thread(
            target=self._run, args=(env, root), name=f"probe {probe.key}", daemon=True
        )

    def _run(self, env: dict[str, str], root: Path) -> None:
        self.result = _check(self.probe, env, root, self.started)

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


def _check(probe: Probe, env: Mapping[str, str], root: Path, started: float) -> ProbeResult:
    secrets = secret_like_values(env)
    try:
        target = probe.target if probe.kind == "env" else _expand(probe.target, env)
    except _Unset as unset:
        needed_by = f"probe {probe.name}" if probe.name else probe.key
        reason = f"{unset.var} is {unset.state} (needed by {needed_by})"
        return ProbeResult(probe.key, False, reason, time.monotonic() - started)
    secrets += passwords_in(target)
    try:
        problem = CHECKERS[probe.kind](probe, target, env, root)
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


class _Unset(Exception):
    def __init__(self, var: str, state: str) -> None:
        super().__init__(var)
        self.var, self.state = var, state


def _expand(target: Any, env: Mapping[str, str]) -> Any:
    if isinstance(target, tuple):
        return tuple(_expand(word, env) for word in target)

    def substitute(match: re.Match[str]) -> str:
        var = match.group(1)
        if var not in env:
            raise _Unset(var, "not set")
        if not env[var]:
            raise _Unset(var, "empty")
        return env[var]

    return _VAR.sub(substitute, target)
