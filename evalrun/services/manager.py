"""Local services for t2 evals: start on demand, wait until ready, always stop.

This module owns the lifetime of each service process: its own session, a
log file, a readiness deadline, and the decision to stop it. The tables
themselves are ``evalrun.services.spec``'s; how a process group is stopped, and
the pidfiles that let the next invocation stop what a SIGKILLed run left behind,
live in ``evalrun.leftovers``; what the built-in throwaway PostgreSQL
(``postgres = "embedded"``) needs to launch lives in ``evalrun.services.postgres``,
and the readable copy of its binaries that a root run uses in
``evalrun.services.postgres_cache``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from evalrun.process import resolve_program, spawn
from evalrun.secrets import scrub
from evalrun.services.spec import ServiceSpec
from evalrun.leftovers import (
    DEFAULT_GRACE, MARKER, remove_data_dir, remove_pidfile, stop_group, write_pidfile,
)

LOG_TAIL_LINES = 5
LOG_TAIL_CHARS = 400
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

ReadyCheck = Callable[[str, Mapping[str, str]], tuple[bool, str]]


class ServiceState(NamedTuple):
    """What ``start`` made of a service: ready with its env, or a failure line."""

    name: str
    ok: bool
    failure: str | None
    env: Mapping[str, str]
    log_path: Path
    pid: int | None = None
    pgid: int | None = None
    data_dir: Path | None = None
    ready_seconds: float = 0.0


class StoppedService(NamedTuple):
    """A service stopped at the end of the run: ``killed_after``, the grace in seconds it ignored the stop
    request for (None: it stopped when asked); ``removed_cluster``: its temporary data folder was removed."""

    name: str
    pgid: int
    killed_after: float | None = None
    removed_cluster: bool = False


@dataclass(eq=False, repr=False)
class _Running:  # a process handle: compared by identity, never printed
    name: str
    kind: str  # "run" or "postgres": how to ask it to stop
    proc: subprocess.Popen[bytes]
    pgid: int
    pidfile: Path
    data_dir: Path | None
    ports: tuple[int, ...] = ()  # the TCP ports it serves on, as far as evalrun knows (its ready probe, its -p)


class _StartFailed(Exception):
    """A service could not start; the message is the user's one line."""


# ---------------------------------------------------------------- manager


class ServiceManager:
    """Starts services once per invocation and stops every one of them.

    Use as a context manager; ``stop_all`` is also safe to call twice and from
    a signal handler (it takes no lock that ``start`` may hold).
    """

    def __init__(
        self,
        specs: Mapping[str, ServiceSpec],
        logs_dir: Path,
        state_dir: Path,
        environ: Mapping[str, str],
        ready_check: ReadyCheck,
        *,
        grace: float = DEFAULT_GRACE,
        secrets: Iterable[str],
    ) -> None:
        self._specs = dict(specs)
        self._logs_dir = Path(logs_dir)
        self._state_dir = Path(state_dir)
        self._environ = dict(environ)
        self._ready_check = ready_check
        self._grace = grace
        # Scrubbed from every line about a service, before it is cut: a log may print a key.
        self._secrets = list(secrets)  # the run's (evalrun.run.context), worked out once
        self._states: dict[str, ServiceState] = {}
        self._running: dict[str, _Running] = {}
        self._died: dict[str, str] = {}
        self._locks = {name: threading.Lock() for name in self._specs}
        self._closed = False
        self._restricted: tuple[str, tuple[int, ...]] | None = None  # the isolation fallback: tier, ports allowed

    def restrict(self, tier: str, ports: Iterable[int]) -> None:
        """Start every service from now on under the isolation fallback (``evalrun.sandbox``), as the scorers: TCP
        only, and ``connect`` only to ``ports`` (the replay proxy's), the services already up and its own."""
        self._restricted = (tier, tuple(ports))

    def __enter__(self) -> ServiceManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    def start(self, name: str) -> ServiceState:
        """Start ``name`` and wait until it is ready; later calls return the same state."""
        if name not in self._specs:
            raise ValueError(f"unknown service {name!r}")
        with self._locks[name]:
            if name not in self._states:
                self._states[name] = self._launch(self._specs[name])
            return self._states[name]

    def env_for(self, names: Iterable[str]) -> dict[str, str]:
        """The variables exported by those services that are up."""
        env: dict[str, str] = {}
        for name in names:
            state = self._states.get(name)
            if state is not None and state.ok:
                env.update(state.env)
        return env

    def tcp_ports(self) -> list[int]:
        """The TCP ports of the services that are up: an embedded PostgreSQL's, and a ``run`` service's whose
        ``ready`` is ``tcp:HOST:PORT`` or an ``http://HOST:PORT/...`` URL (what the isolation fallback lets a
        t2 scorer connect to)."""
        return sorted({port for running in self._running.values() for port in running.ports})

    def failure_for(self, names: Iterable[str]) -> str | None:
        """A one-line reason if any of those services failed to start or has died since."""
        for name in names:
            state = self._states.get(name)
            if state is None:
                return f"service {name} was not started by this run"
            if not state.ok:
                return state.failure
            if name in self._died:
                return self._died[name]
            running = self._running.get(name)
            code = running.proc.poll() if running is not None else None
            if code is not None:
                tail = _log_tail(state.log_path, secrets=self._secrets)
                self._died[name] = f"service {name} died ({_describe_exit(code)}) during the run: {tail}"
                return self._died[name]
        return None

    def stop_all(self) -> list[StoppedService]:
        """Stop every service this manager started; returns what became of each (``reports_out.run_notes``)."""
        self._closed = True
        lines = []
        for name in list(self._running):
            running = self._running.pop(name, None)  # pop first: a second caller finds nothing
            if running is not None:
                lines.append(self._stop(running))
        return lines

    # -- starting

    def _launch(self, spec: ServiceSpec) -> ServiceState:
        log_path = self._logs_dir / f"{spec.name}.log"
        begun = time.monotonic()
        try:
            self._raise_if_closed(spec)
            self._logs_dir.mkdir(parents=True, exist_ok=True)
            self._state_dir.mkdir(parents=True, exist_ok=True)
            log_path.write_bytes(b"")
            deadline = begun + spec.ready_timeout
            if spec.postgres:
                # local: only a run with a postgres service loads the embedded server's modules
                from evalrun.services.postgres import PostgresUnavailable

                try:
                    env, running = self._launch_postgres(spec, log_path, deadline)
                except PostgresUnavailable as exc:
                    raise _StartFailed(str(exc)) from exc
            else:
                env, running = self._launch_run(spec, log_path, deadline)
        except _StartFailed as exc:
            self._drop(spec.name)
            return ServiceState(spec.name, False, scrub(str(exc), self._secrets), {}, log_path)
        except OSError as exc:  # a log or state folder we cannot write
            self._drop(spec.name)
            where = f" {exc.filename}" if exc.filename else ""
            problem = f"service {spec.name} could not start:{where}: {exc.strerror or exc}"
            return ServiceState(spec.name, False, problem, {}, log_path)
        return ServiceState(
            spec.name, True, None, env, log_path, running.proc.pid, running.pgid, running.data_dir,
            time.monotonic() - begun,
        )

    def _launch_run(self, spec: ServiceSpec, log_path: Path, deadline: float) -> tuple[dict[str, str], _Running]:
        assert spec.run is not None
        exports = _expand_env(spec, self._environ, {})
        child_env = {**self._environ, **exports}
        program, problem = resolve_program(spec.run[0], spec.dir, child_env)
        if program is None:
            raise _StartFailed(f"service {spec.name}: {problem} (run[0] of [services.{spec.name}])")
        requirement = _expand(spec.ready, child_env, spec.name, "ready") if spec.ready else None
        running = self._spawn(spec, [program, *spec.run[1:]], spec.dir, child_env, log_path, None, None,
                              _port_of(requirement))
        self._await_ready(spec, running, requirement, child_env, deadline, None)
        running.ports = _port_of(requirement)
        return exports, running

    def _launch_postgres(self, spec: ServiceSpec, log_path: Path, deadline: float) -> tuple[dict[str, str], _Running]:
        from evalrun.services.postgres import free_port, postgres_bin_dir, postgres_user
        from evalrun.services.postgres_cache import staged_bin_dir

        bin_dir = postgres_bin_dir(spec.name)
        user = postgres_user(spec.name)
        if user is not None:  # the server user may not reach the venv (a mode-700 /root): use a readable copy
            bin_dir = staged_bin_dir(bin_dir, spec.name, self._environ)
        data_dir = Path(tempfile.mkdtemp(prefix="evalrun-pg-"))
        cluster = data_dir / "data"
        try:
            (data_dir / MARKER).write_text(f"{spec.name}\n")
            cluster.mkdir(mode=0o700)
            if user is not None:
                for folder in (data_dir, cluster):
                    os.chown(folder, user[0], user[1])
        except OSError:
            shutil.rmtree(data_dir, ignore_errors=True)  # nothing tracks it yet
            raise
        env = {"PATH": os.defpath, "LC_ALL": "C", "LANG": "C"}  # no user secrets reach the server
        initdb = [str(bin_dir / "initdb"), "-D", str(cluster), "-U", "postgres", "--auth=trust",
                  "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"]
        setup = self._spawn(spec, initdb, data_dir, env, log_path, data_dir, user)
        try:
            code = setup.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise _StartFailed(self._not_ready(spec, log_path, "initdb still running", self._secrets)) from None
        self._raise_if_closed(spec)
        if code != 0:
            raise _StartFailed(f"service {spec.name}: initdb failed ({_describe_exit(code)}): {_log_tail(log_path, secrets=self._secrets)}")
        for _attempt in range(3):  # a free port may be taken between our check and the server's bind
            port = free_port()
            argv = [str(bin_dir / "postgres"), "-D", str(cluster), "-p", str(port), "-c", "listen_addresses=127.0.0.1",
                    "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "full_page_writes=off",
                    "-c", "synchronous_commit=off"]
            url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
            exports = {spec.url_var: url, **_expand_env(spec, self._environ, {spec.url_var: url})}
            ready_env = {**self._environ, **exports}
            requirement = _expand(spec.ready, ready_env, spec.name, "ready") if spec.ready else None
            # Each try replaces the tracked process, so a failure still removes the cluster.
            running = self._spawn(spec, argv, data_dir, env, log_path, data_dir, user, (port,))
            try:
                self._await_ready(spec, running, requirement, ready_env, deadline, (cluster, port))
            except _StartFailed:
                if running.proc.poll() is not None and "could not bind" in _log_tail(log_path, 20):
                    continue
                raise
            running.ports = (port,)
            return exports, running
        raise _StartFailed(f"service {spec.name}: no free port on 127.0.0.1 after 3 tries: {_log_tail(log_path, secrets=self._secrets)}")

    def _spawn(
        self, spec: ServiceSpec, argv: list[str], cwd: Path, env: Mapping[str, str], log_path: Path,
        data_dir: Path | None, user: tuple[int, int] | None, ports: tuple[int, ...] = (),
    ) -> _Running:
        as_user: dict[str, Any] = {"user": user[0], "group": user[1], "extra_groups": []} if user else {}
        sandbox = self._sandbox(spec, ports)
        with open(log_path, "ab") as log:
            try:
                proc = spawn(argv, cwd, env, stdout=log, stderr=subprocess.STDOUT, sandbox=sandbox, **as_user)
            except OSError as exc:
                hint = ""
                if user is not None:
                    hint = (f" (PostgreSQL refuses to run as root, so it runs as uid {user[0]}, who must be able to "
                            f"read {argv[0]})")
                raise _StartFailed(f"service {spec.name}: cannot run {argv[0]}: {exc.strerror or exc}{hint}") from None
            finally:
                if sandbox is not None:
                    sandbox.close()  # the service keeps its restrictions; the thread that started it is done
        running = _Running(spec.name, "postgres" if spec.postgres else "run", proc, proc.pid,
                           self._state_dir / f"{spec.name}.{os.getpid()}.json", data_dir)
        self._running[spec.name] = running
        write_pidfile(running.pidfile, running.name, running.kind, proc.pid, running.pgid, data_dir)
        self._raise_if_closed(spec)  # stop_all ran while we spawned: _drop stops this one
        return running

    def _sandbox(self, spec: ServiceSpec, own: tuple[int, ...]) -> Any:
        """Under the isolation fallback: a restricted thread to start this service from (``evalrun.sandbox``)."""
        if self._restricted is None:
            return None
        from evalrun.sandbox import Rules, Sandbox

        tier, allowed = self._restricted
        sandbox, why = Sandbox.open(Rules(tier, tuple(sorted({*allowed, *self.tcp_ports(), *own}))))
        if sandbox is None:
            raise _StartFailed(f"service {spec.name}: cannot start it isolated: {why}")
        return sandbox

    def _raise_if_closed(self, spec: ServiceSpec) -> None:
        if self._closed:  # stop_all (a signal, another thread) got here first
            raise _StartFailed(f"service {spec.name} was stopped: the run is stopping")

    def _await_ready(
        self, spec: ServiceSpec, running: _Running, requirement: str | None, env: Mapping[str, str],
        deadline: float, postgres: tuple[Path, int] | None,
    ) -> None:
        pause, reason = 0.05, "not checked yet"
        while True:
            code = running.proc.poll()
            self._raise_if_closed(spec)  # after poll: an exit we caused is not the service's fault
            if code is not None:
                raise _StartFailed(
                    f"service {spec.name} exited ({_describe_exit(code)}) before becoming ready: "
                    f"{_log_tail(self._logs_dir / f'{spec.name}.log', secrets=self._secrets)}"
                )
            ok = True
            if postgres is not None:
                from evalrun.services.postgres import postgres_ready

                ok, reason = postgres_ready(*postgres)
            if ok and requirement is not None:
                ok, reason = self._check(requirement, env)
            if ok:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise _StartFailed(self._not_ready(spec, self._logs_dir / f"{spec.name}.log", reason, self._secrets))
            time.sleep(min(pause, left))
            pause = min(pause * 1.5, 0.5)

    def _check(self, requirement: str, env: Mapping[str, str]) -> tuple[bool, str]:
        try:
            return self._ready_check(requirement, env)
        except Exception as exc:  # the caller's probe must not crash the run; its text may hold a secret
            return False, f"ready check raised {type(exc).__name__}"

    @staticmethod
    def _not_ready(spec: ServiceSpec, log_path: Path, reason: str, secrets: Iterable[str]) -> str:
        return (f"service {spec.name} did not become ready in {spec.ready_timeout:.1f} s: "
                f"{_log_tail(log_path, secrets=secrets)} (last check: {reason}; log: {log_path})")

    # -- stopping

    def _drop(self, name: str) -> None:
        running = self._running.pop(name, None)
        if running is not None:
            self._stop(running)

    def _stop(self, running: _Running) -> StoppedService:
        killed = stop_group(running.pgid, running.kind, self._grace, running.proc)
        removed = remove_data_dir(running.data_dir)
        remove_pidfile(running.pidfile)
        return StoppedService(running.name, running.pgid, self._grace if killed else None, bool(removed))


# ---------------------------------------------------------------- helpers


def _describe_exit(code: int) -> str:
    if code >= 0:
        return f"exit {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES, *, secrets: Iterable[str] = ()) -> str:
    """The last lines of a log as one line, secrets scrubbed before the cut; the message must stay one line."""
    try:
        with open(path, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 16 * 1024))
            text = scrub(fh.read().decode("utf-8", errors="replace"), secrets)
    except OSError:
        return "(no log)"
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    tail = " | ".join(kept)
    if len(tail) > LOG_TAIL_CHARS:
        tail = "..." + tail[-LOG_TAIL_CHARS:]
    return tail or "(no output)"


def _expand(value: str, env: Mapping[str, str], service: str, where: str) -> str:
    def one(match: re.Match[str]) -> str:
        var = match.group(1)
        if var not in env:
            # name the variable, never a value
            raise _StartFailed(f"service {service}: {where} uses ${{{var}}}, which is not set; export it or remove it")
        return env[var]

    return _REF.sub(one, value)


def _expand_env(spec: ServiceSpec, environ: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """Expand ``${VAR}`` from the environment, the service's own URL and keys defined above."""
    sources, exports = {**environ, **own}, {}
    for key, value in spec.env.items():
        exports[key] = sources[key] = _expand(value, sources, spec.name, f"env.{key}")
    return exports


def _port_of(requirement: str | None) -> tuple[int, ...]:
    """The TCP port a ``ready`` requirement names: ``tcp:HOST:PORT``, or an http(s) URL's; none otherwise."""
    from urllib.parse import urlsplit

    if not requirement:
        return ()
    try:
        if requirement.startswith("tcp:"):
            port = int(requirement.rsplit(":", 1)[1])
            return (port,) if 0 < port < 65536 else ()
        if requirement.startswith(("http://", "https://", "http:")):
            url = urlsplit(requirement if "://" in requirement else "http://" + requirement[5:])
            return (url.port or (443 if url.scheme == "https" else 80),)
    except ValueError:
        pass
    return ()
