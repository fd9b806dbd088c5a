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
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalrun.errors import ManifestError
from evalrun.manifest import INLINE_PROBE_KINDS, Manifest

KINDS = INLINE_PROBE_KINDS
DEFAULT_PROBE_TIMEOUT = 2.0
_TABLE_KEYS = ("timeout", "expect_json")
# Slack the watchdog grants beyond a probe's own timeout before it gives up on
# the thread: libraries round timeouts (libpq waits at least 2 s) or apply them
# per phase (httpx: connect, then read), and the user was promised the timeout.
_GRACE_S = 0.5
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):(?P<pw>[^/?#\s]+)@")
# Exit 3: not importable (find_spec of "a.b" raises when "a" itself is missing).
_FIND_SPEC = (
    "import importlib.util as u, sys\n"
    "try: f = u.find_spec(sys.argv[1])\nexcept Exception: f = None\nsys.exit(0 if f else 3)"
)
_KV_SECRET = re.compile(
    r"(?<![A-Za-z0-9_])(?P<key>password|passwd|pass|pwd|sslpassword|token|secret|api_key|apikey|key)="
    r"(?P<pw>'(?:[^'\\]|\\.)*'|[^\s&]*)",
    re.IGNORECASE,
)


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
    label = _label(manifest.path)
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
        problem = _split_host_port(target)[2]
        if problem:
            raise ManifestError(f"{place}: {problem}")
    elif kind == "http":
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ManifestError(f"{place}: not an http(s) URL; write e.g. http://127.0.0.1:8000/health")
    elif kind == "python" and not _MODULE.match(target):
        raise ManifestError(f"{place}: {target!r} is not a module name; write e.g. python:yaml")


def _split_host_port(target: str) -> tuple[str, int, str]:
    """``host:port`` or ``[v6]:port`` -> (host, port, problem); problem is "" when fine."""
    host, sep, port_text = target.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return "", 0, f"expected HOST:PORT with a port 1-65535, e.g. 127.0.0.1:5432, got {target!r}"
    return host, int(port_text), ""


def _has_var(target: Any) -> bool:
    words = target if isinstance(target, tuple) else (target,)
    return any(_VAR.search(w) for w in words)


def _label(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


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
            probe.key, False, f"{where}: no answer after {_seconds(probe.timeout)} s", time.monotonic() - self.started
        )


def _check(probe: Probe, env: Mapping[str, str], root: Path, started: float) -> ProbeResult:
    secrets = _secret_values(env)
    try:
        target = probe.target if probe.kind == "env" else _expand(probe.target, env)
    except _Unset as unset:
        needed_by = f"probe {probe.name}" if probe.name else probe.key
        reason = f"{unset.var} is {unset.state} (needed by {needed_by})"
        return ProbeResult(probe.key, False, reason, time.monotonic() - started)
    secrets += _passwords_in(target)
    try:
        problem = _CHECKERS[probe.kind](probe, target, env, root)
    except Exception as exc:  # a probe reports, it never crashes the run
        problem = f"probe failed unexpectedly: {type(exc).__name__}: {_first_line(str(exc))}"
    duration = time.monotonic() - started
    if problem is None:
        return ProbeResult(probe.key, True, "", duration)
    if probe.kind == "env":
        reason = f"env {probe.name}: {target} {problem}" if probe.name else f"env {target} {problem}"
    elif probe.name:
        reason = f"{probe.kind} {probe.name}: {problem} ({_show(target)})"
    else:
        reason = f"{_prefix(probe, target)}: {problem}"
    return ProbeResult(probe.key, False, _scrub(reason, secrets), duration)


def _prefix(probe: Probe, expanded: Any) -> str:
    """Inline probes are named by kind and target: ``tcp 127.0.0.1:5432``."""
    return f"{probe.kind} {_show(expanded if expanded is not None else probe.target)}"


def _show(target: Any) -> str:
    text = shlex.join(target) if isinstance(target, tuple) else str(target)
    return redact(text)


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


# --------------------------------------------------------------------------- secrets


def redact(text: str) -> str:
    """Hide passwords in URLs and DSNs: ``postgresql://u:***@h/db``, ``password=***``."""
    text = _URL_PASSWORD.sub(r"\g<head>:***@", text)
    return _KV_SECRET.sub(lambda m: f"{m.group('key')}=***" if m.group("pw") else m.group(0), text)


def _passwords_in(target: Any) -> list[str]:
    words = target if isinstance(target, tuple) else (target,)
    found: list[str] = []
    for word in words:
        found += [m.group("pw") for m in _URL_PASSWORD.finditer(word)]
        found += [m.group("pw").strip("'") for m in _KV_SECRET.finditer(word)]
    # A very short password would scrub ordinary letters out of every message.
    return [pw for pw in found if len(pw) >= 4]


def _secret_values(env: Mapping[str, str]) -> list[str]:
    return [
        value
        for name, value in env.items()
        if _SECRET_NAME.search(name) and name not in ("PWD", "OLDPWD") and len(value) >= 6
    ]


def _scrub(text: str, secrets: list[str]) -> str:
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


# --------------------------------------------------------------------------- checkers
# Each returns None when the probe is met, or the problem as a short phrase.


def _check_env(probe: Probe, name: str, env: Mapping[str, str], root: Path) -> str | None:
    if name not in env:
        return "is not set"
    return None if env[name] else "is empty"


def _check_cmd(probe: Probe, program: str, env: Mapping[str, str], root: Path) -> str | None:
    if _resolve_program(program, env, root):
        return None
    return f"no executable file at {root / program}" if "/" in program else "not found on PATH"


def _check_file(probe: Probe, relative: str, env: Mapping[str, str], root: Path) -> str | None:
    path = root / relative
    return None if path.exists() else f"no such file or folder: {path}"


def _check_tcp(probe: Probe, address: str, env: Mapping[str, str], root: Path) -> str | None:
    host, port, problem = _split_host_port(address)
    if problem:
        return problem
    try:
        with socket.create_connection((host, port), timeout=probe.timeout):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no answer after {_seconds(probe.timeout)} s"
    except socket.gaierror:
        return f"cannot resolve host {host!r}"
    except OSError as exc:
        return f"cannot connect: {exc.strerror or exc}"


def _check_http(probe: Probe, url: str, env: Mapping[str, str], root: Path) -> str | None:
    import httpx

    try:
        # trust_env=False: a probe asks the service itself, not whatever proxy the shell names.
        with httpx.Client(timeout=httpx.Timeout(probe.timeout), follow_redirects=True, trust_env=False) as client:
            response = client.get(url)
    except httpx.TimeoutException:
        return f"no answer after {_seconds(probe.timeout)} s"
    except (httpx.InvalidURL, httpx.UnsupportedProtocol):
        return "not an http(s) URL; write e.g. http://127.0.0.1:8000/health"
    except httpx.ConnectError as exc:
        text = str(exc).lower()
        if "refused" in text:
            return "connection refused"
        if "name or service" in text or "nodename" in text or "getaddrinfo" in text:
            return f"cannot resolve host {urlsplit(url).hostname!r}"
        return f"cannot connect: {_first_line(str(exc))}"
    except httpx.TooManyRedirects:
        return "too many redirects"
    except httpx.HTTPError as exc:
        return f"request failed: {type(exc).__name__}: {_first_line(str(exc))}"
    if not 200 <= response.status_code < 300:
        return f"answered {response.status_code} {response.reason_phrase}".rstrip()
    if probe.expect_json:
        return _compare_json(response.status_code, response.content, probe.expect_json)
    return None


def _compare_json(status: int, content: bytes, expected: dict[str, Any]) -> str | None:
    try:
        body = json.loads(content)
    except ValueError:
        return f"answered {status} but the body is not JSON; expect_json needs a JSON object"
    if not isinstance(body, dict):
        return f"answered {status} with a JSON {type(body).__name__}, but expect_json needs a JSON object"
    return _compare_fields(body, expected)


def _compare_fields(body: dict[str, Any], expected: dict[str, Any], path: str = "") -> str | None:
    for field, want in expected.items():
        where = f"{path}{field}"
        if field not in body:
            return f"{where} is missing, expected {_json(want)}"
        got = body[field]
        if isinstance(want, dict) and isinstance(got, dict):
            problem = _compare_fields(got, want, where + ".")
            if problem:
                return problem
        elif not _same(got, want):
            return f"{where} is {_json(got)}, expected {_json(want)}"
    return None


def _same(got: Any, want: Any) -> bool:
    # JSON true is not 1: Python's True == 1 would let a wrong type pass.
    if isinstance(got, bool) or isinstance(want, bool):
        return type(got) is type(want) and got == want
    return bool(got == want)


def _json(value: Any) -> str:
    return _clip(json.dumps(value, default=str), 60)


def _check_postgres(probe: Probe, dsn: str, env: Mapping[str, str], root: Path) -> str | None:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=max(1, math.ceil(probe.timeout)), autocommit=True) as conn:
            conn.execute("select 1").fetchone()
    except psycopg.ProgrammingError:
        # libpq quotes the bad part of the DSN, which may be the password: say less.
        return "not a valid DSN; write postgresql://USER:PASSWORD@HOST:PORT/DB or key=value pairs"
    except psycopg.Error as exc:
        return _describe_pg_error(str(exc), probe.timeout)
    return None


def _describe_pg_error(message: str, timeout: float) -> str:
    auth = re.search(r'password authentication failed for user "[^"]*"', message)
    if auth:
        return auth.group(0)
    lowered = message.lower()
    if "connection refused" in lowered:
        return "connection refused"
    if "timeout expired" in lowered or "timed out" in lowered:
        return f"no answer after {_seconds(timeout)} s"
    if "no such file or directory" in lowered:
        return "no server listening on that socket"
    line = _first_line(message).rsplit("failed: ", 1)[-1]
    return line.removeprefix("FATAL:").strip() or "connection failed"


def _check_command(probe: Probe, argv: tuple[str, ...], env: Mapping[str, str], root: Path) -> str | None:
    program = _resolve_program(argv[0], env, root)
    if program is None:
        return f"program not found: {argv[0]}"
    code, tail = _run_argv((program, *argv[1:]), env, root, probe.timeout)
    if code is None:
        return f"still running after {_seconds(probe.timeout)} s; killed it"
    if code != 0:
        return f"exited {code}" + (f": {tail}" if tail else "")
    return None


def _check_python(probe: Probe, module: str, env: Mapping[str, str], root: Path) -> str | None:
    if not _MODULE.match(module):
        return f"{module!r} is not a module name"
    # The scorer's interpreter is what matters: a scorer's ["python", ...] runs
    # evalrun's own interpreter (see execute.scorer_argv), asked in a child process
    # so the probe does not import the module into evalrun.
    interpreter = _interpreter(env)
    code, tail = _run_argv((interpreter, "-c", _FIND_SPEC, module), env, root, probe.timeout)
    if code is None:
        return f"{interpreter} gave no answer after {_seconds(probe.timeout)} s"
    if code == 3:
        return f"not importable by {interpreter}"
    if code != 0:
        return f"{interpreter} exited {code}" + (f": {tail}" if tail else "")
    return None


def _interpreter(env: Mapping[str, str]) -> str:
    """The interpreter a scorer's ``["python", ...]`` runs: evalrun's own."""
    return sys.executable


def _which(program: str, env: Mapping[str, str]) -> str | None:
    return shutil.which(program, path=env.get("PATH", os.defpath))


def _resolve_program(program: str, env: Mapping[str, str], root: Path) -> str | None:
    if "/" in program:
        path = root / program
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return _which(program, env)


def _run_argv(argv: tuple[str, ...], env: Mapping[str, str], root: Path, timeout: float) -> tuple[int | None, str]:
    """Run argv in root; (exit code or None on timeout, last output line)."""
    # Output goes to a file, not a pipe: a grandchild that keeps a pipe open
    # would make reading it outlast the timeout.
    with tempfile.TemporaryFile() as output:
        try:
            proc = subprocess.Popen(
                argv, cwd=root, env=dict(env), stdin=subprocess.DEVNULL, stdout=output,
                stderr=subprocess.STDOUT, start_new_session=True,
            )
        except OSError as exc:
            return 127, f"cannot start {argv[0]}: {exc.strerror or exc}"
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
            # The whole group, while the unreaped child still holds its id: a
            # probe's `sh -c "sleep 9"` must not leave the sleep behind.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        output.seek(0)
        lines = [line for line in output.read().decode("utf-8", "replace").splitlines() if line.strip()]
    return code, _clip(lines[-1].strip(), 200) if lines else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _seconds(value: float) -> str:
    return f"{value:.1f}" if round(value, 1) == value else f"{value:g}"


_CHECKERS = {
    "env": _check_env,
    "cmd": _check_cmd,
    "file": _check_file,
    "tcp": _check_tcp,
    "http": _check_http,
    "postgres": _check_postgres,
    "python": _check_python,
    "command": _check_command,
}
