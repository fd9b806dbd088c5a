"""How each kind of probe is checked, and how its reasons are kept free of secrets.

This module owns the per-kind checks behind ``evalrun.probes.run`` (``env``, ``cmd``,
``file``, ``tcp``, ``http``, ``postgres``, ``python``, ``command``), the helpers
they share, and redaction: passwords in URLs and DSNs are shown as ``***`` and
known secret values are scrubbed from every reason. ``evalrun.probes.run`` parses
probes, runs them under their deadlines and builds the one-line reasons.

Each checker takes the probe, its expanded target, the environment, the
manifest's folder and the run's cancel event (set on Ctrl-C: a probe's child
process is stopped with the run), and returns None when the probe is met or the problem as a
short phrase; ``CHECKERS`` maps each kind to its checker. httpx and psycopg are
imported inside the checkers that use them, so importing evalrun stays cheap.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalrun.probes.spec import MODULE_NAME, Probe, split_host_port
from evalrun.process import ProcessOutcome, ProcessRequest, resolve_program, run_process


# Exit 3: not importable (find_spec of "a.b" raises when "a" itself is missing).
_FIND_SPEC = (
    "import importlib.util as u, sys\n"
    "try: f = u.find_spec(sys.argv[1])\nexcept Exception: f = None\nsys.exit(0 if f else 3)"
)
# A probe's deadline is what the user was promised: a child gets little time
# between TERM and KILL (the watchdog in evalrun.probes.run allows 0.5 s past it).
_STOP_GRACE_S = 0.2


# --------------------------------------------------------------------------- checkers
# Each returns None when the probe is met, or the problem as a short phrase.


def _check_env(probe: Probe, name: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    if name not in env:
        return "is not set"
    return None if env[name] else "is empty"


def _check_cmd(probe: Probe, program: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    if resolve_program(program, root, env)[0]:
        return None
    return f"no executable file at {root / program}" if "/" in program else "not found on PATH"


def _check_file(probe: Probe, relative: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    path = root / relative
    return None if path.exists() else f"no such file or folder: {path}"


def _check_tcp(probe: Probe, address: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    host, port, problem = split_host_port(address)
    if problem:
        return problem
    try:
        with socket.create_connection((host, port), timeout=probe.timeout):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no answer after {seconds(probe.timeout)} s"
    except socket.gaierror:
        return f"cannot resolve host {host!r}"
    except OSError as exc:
        return f"cannot connect: {exc.strerror or exc}"


def _check_http(probe: Probe, url: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    import httpx

    try:
        # trust_env=False: a probe asks the service itself, not whatever proxy the shell names.
        with httpx.Client(timeout=httpx.Timeout(probe.timeout), follow_redirects=True, trust_env=False) as client:
            response = client.get(url)
    except httpx.TimeoutException:
        return f"no answer after {seconds(probe.timeout)} s"
    except (httpx.InvalidURL, httpx.UnsupportedProtocol):
        return "not an http(s) URL; write e.g. http://127.0.0.1:8000/health"
    except httpx.ConnectError as exc:
        text = str(exc).lower()
        if "refused" in text:
            return "connection refused"
        if "name or service" in text or "nodename" in text or "getaddrinfo" in text:
            return f"cannot resolve host {urlsplit(url).hostname!r}"
        return f"cannot connect: {first_line(str(exc))}"
    except httpx.TooManyRedirects:
        return "too many redirects"
    except httpx.HTTPError as exc:
        return f"request failed: {type(exc).__name__}: {first_line(str(exc))}"
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


def _check_postgres(probe: Probe, dsn: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
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
        return f"no answer after {seconds(timeout)} s"
    if "no such file or directory" in lowered:
        return "no server listening on that socket"
    line = first_line(message).rsplit("failed: ", 1)[-1]
    return line.removeprefix("FATAL:").strip() or "connection failed"


def _check_command(probe: Probe, argv: tuple[str, ...], env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    outcome = _run(argv, env, root, probe.timeout, cancel)
    if outcome.start_error:
        return outcome.start_error
    if outcome.timed_out:
        return f"still running after {seconds(probe.timeout)} s; killed it"
    if outcome.exit_code != 0:
        tail = _last_line(outcome)
        return f"exited {outcome.exit_code}" + (f": {tail}" if tail else "")
    return None


def _check_python(probe: Probe, module: str, env: Mapping[str, str], root: Path, cancel: threading.Event) -> str | None:
    if not MODULE_NAME.match(module):
        return f"{module!r} is not a module name"
    # The scorer's interpreter is what matters: a scorer's ["python", ...] runs
    # evalrun's own interpreter (see process.resolve_program), asked in a child process
    # so the probe does not import the module into evalrun.
    interpreter = sys.executable
    outcome = _run((interpreter, "-c", _FIND_SPEC, module), env, root, probe.timeout, cancel)
    if outcome.start_error:
        return outcome.start_error
    if outcome.timed_out:
        return f"{interpreter} gave no answer after {seconds(probe.timeout)} s"
    if outcome.exit_code == 3:
        return f"not importable by {interpreter}"
    if outcome.exit_code != 0:
        tail = _last_line(outcome)
        return f"{interpreter} exited {outcome.exit_code}" + (f": {tail}" if tail else "")
    return None


def _run(
    argv: tuple[str, ...], env: Mapping[str, str], root: Path, timeout: float, cancel: threading.Event
) -> ProcessOutcome:
    """Run argv in root under the probe's deadline; the whole group is stopped after it."""
    request = ProcessRequest(argv=argv, cwd=root, env=env, timeout=timeout, grace=_STOP_GRACE_S, tail_bytes=4096)
    spawned = getattr(cancel, "spawned", None)  # a run's ProbeCancel keeps the groups it must stop on Ctrl-C
    record = (lambda pid, _start: spawned.add(pid)) if spawned is not None else None
    return run_process(request, cancel, on_spawned=record)


def _last_line(outcome: ProcessOutcome) -> str:
    lines = [line for line in outcome.text_tail().splitlines() if line.strip()]
    return _clip(lines[-1].strip(), 200) if lines else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_line(text: str) -> str:
    """The first line of an error's text: reasons stay one line."""
    return text.strip().splitlines()[0] if text.strip() else ""


def seconds(value: float) -> str:
    """A timeout as the user would write it: ``2.0``, ``0.25``."""
    return f"{value:.1f}" if round(value, 1) == value else f"{value:g}"


CHECKERS = {
    "env": _check_env,
    "cmd": _check_cmd,
    "file": _check_file,
    "tcp": _check_tcp,
    "http": _check_http,
    "postgres": _check_postgres,
    "python": _check_python,
    "command": _check_command,
}
