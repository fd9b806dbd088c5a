"""Run ``python -m evalrun`` many times, cheaply: each run a child forked from one warm process.

The gate-bites and manifest-errors scorers run evalrun about fifty times. A
fresh ``python -m evalrun`` spends about 0.3 s of CPU importing typer,
pydantic and evalrun before it reads its arguments, and these cases each need
only a few hundredths of a second more. So a *zygote* imports evalrun once,
then forks one child per run. Each child is set up as ``python -m evalrun``
would be in that folder:

- its own session and process group (``setsid``), its own folder (``chdir``),
  exactly the environment it is given, stdin from ``/dev/null``, stdout and
  stderr into the files it is given;
- ``sys.argv`` is ``[<evalrun/__main__.py>, *args]`` and ``sys.path[0]`` its
  folder, as ``-m`` sets them;
- it runs evalrun's ``__main__`` through ``runpy`` (what ``-m`` does), and
  leaves by the interpreter's normal shutdown, so atexit handlers and buffered
  output behave as in a fresh process. Its exit code is the zygote's
  ``waitpid`` status, exact: a signal reads as ``-N``, as ``Popen`` gives it.

What a child shares with the zygote is what was imported before the fork;
every environment variable evalrun reads, it reads at run time.

The zygote is single-threaded (forking a process with threads is unsafe); the
scorer's threads talk to it through one :class:`Zygote` over two pipes, a JSON
line per message. When its requests end it waits for its children; if it is
stopped, it kills their process groups first, so it leaves nothing running.

Run as a script, this file is the zygote.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

# What a ``python -m evalrun t1`` imports as it runs, past the command itself: each run
# would import these again (history in SQLite, the reporters, selection, the XML and
# statistics modules). Imported only, none of them runs anything or reads the
# environment at import, so a child still reads every variable at run time.
WARM_MODULES = (
    "typer._adapters",  # where typer has it, it builds one per option as it parses
    "typer._click.decorators",
    "evalrun.history.backends", "evalrun.history.sqlite", "evalrun.run.isolation", "evalrun.locks",
    "evalrun.models.replay.fixtures", "evalrun.reports_in.positional", "evalrun.reports_out.github",
    "evalrun.reports_out.junit", "evalrun.reports_out.markdown", "evalrun.reports_out.positional",
    "evalrun.selection.changed", "evalrun.selection.checkout", "evalrun.selection.shards",
    "sqlite3", "statistics", "tarfile", "xml.etree.ElementTree", "pickle", "html.entities",
    # A history in PostgreSQL: each run would import psycopg (about 150 ms of CPU) again. Skipped where absent;
    # psycopg reads PSYCOPG_IMPL as it is imported, so here once, from the zygote's environment.
    "psycopg", "evalrun.history.postgres",
)
POLL_S = 0.01  # how often the zygote looks for children that ended while it waits for a request
STOP_GRACE_S = 10.0  # past its limit, how long a run may take to stop after SIGTERM, then after SIGKILL


# -- the scorer's side ----------------------------------------------------------


@dataclass
class _Pending:
    done: threading.Event
    pid: int | None = None
    code: int | None = None


class ZygoteDied(RuntimeError):
    """The zygote ended before it reported a run's exit code."""


class Zygote:
    """One warm process that runs ``python -m evalrun ARGS`` in forked children; safe to share between threads."""

    def __init__(self, env: dict[str, str]) -> None:
        self._startup = _startup_settings(env)
        self._proc = subprocess.Popen(
            [sys.executable, __file__], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        self._requests: BinaryIO = self._proc.stdin
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._ended = False
        self._stderr: list[bytes] = []
        self._reader = threading.Thread(target=self._read_replies, args=(self._proc.stdout,), daemon=True)
        self._errors = threading.Thread(target=self._stderr.extend, args=(self._proc.stderr,), daemon=True)
        self._reader.start()
        self._errors.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def run(self, args: tuple[str, ...], cwd: Path, env: dict[str, str], stdout: Path, stderr: Path, limit_s: float) -> int | None:
        """Run evalrun with ``args`` in ``cwd``; its exit code, or None if it was killed at ``limit_s``.

        A run whose environment would start the interpreter differently (a
        ``PYTHON*``, ``LANG`` or ``LC_*`` variable not as the zygote's) runs
        as a fresh ``python -m evalrun`` instead: a fork cannot start again.
        """
        if _startup_settings(env) != self._startup:
            return _run_fresh(args, cwd, env, stdout, stderr, limit_s)
        with self._lock:
            ended = self._ended
            if not ended:
                job_id, self._next_id = self._next_id, self._next_id + 1
                pending = self._pending[job_id] = _Pending(threading.Event())
                request = {"id": job_id, "args": list(args), "cwd": str(cwd), "env": env,
                           "stdout": str(stdout), "stderr": str(stderr)}
                try:
                    self._requests.write(json.dumps(request).encode() + b"\n")
                    self._requests.flush()
                except BrokenPipeError:
                    ended = True
        if ended:
            raise ZygoteDied(self._why())
        if pending.done.wait(limit_s):
            return self._result(pending)
        # Past the limit: stopped as evalrun stops a scorer, SIGTERM (evalrun then stops its own
        # scorers) and SIGKILL after a grace. The zygote reports the pid right after the fork; on a
        # loaded machine that report can come after the limit, so it is waited for (a run never
        # signalled would never end, and the zygote waits for its children when it closes).
        reported = time.monotonic() + STOP_GRACE_S
        while pending.pid is None and not pending.done.is_set() and time.monotonic() < reported:
            time.sleep(0.02)
        if pending.pid is not None:
            _signal_group(pending.pid, signal.SIGTERM)
            if not pending.done.wait(STOP_GRACE_S):
                _signal_group(pending.pid, signal.SIGKILL)
        pending.done.wait(STOP_GRACE_S)
        self._result(pending)  # raises if the zygote died meanwhile
        return None

    def close(self) -> None:
        """End the requests and wait for the zygote, which waits for its children."""
        try:
            self._requests.close()
        except BrokenPipeError:
            pass
        self._proc.wait()
        self._reader.join()
        self._errors.join()

    def __enter__(self) -> Zygote:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self._proc.terminate()  # it kills the runs it started
        self.close()

    def _result(self, pending: _Pending) -> int:
        with self._lock:
            code, ended = pending.code, self._ended
        if code is not None:
            return code
        if ended:
            raise ZygoteDied(self._why())
        raise ZygoteDied(f"run {pending.pid} did not end within {STOP_GRACE_S:g} s of SIGTERM, then of SIGKILL")

    def _read_replies(self, replies: BinaryIO) -> None:
        for line in replies:
            reply = json.loads(line)
            with self._lock:
                pending = self._pending[reply["id"]]
                if "pid" in reply:
                    pending.pid = reply["pid"]
                else:
                    pending.code = reply["code"]
                    pending.done.set()
        with self._lock:
            self._ended = True
            for pending in self._pending.values():
                pending.done.set()  # those without a code raise ZygoteDied

    def _why(self) -> str:
        self._proc.wait()
        self._errors.join()
        tail = b"".join(self._stderr).decode("utf-8", errors="replace")[-2000:]
        return f"the evalrun zygote ended with exit code {self._proc.returncode} before a run finished:\n{tail}"


def _startup_settings(env: dict[str, str]) -> dict[str, str]:
    """The variables that decide how the interpreter starts (paths, encodings, flags)."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k == "LANG"}


def _run_fresh(args: tuple[str, ...], cwd: Path, env: dict[str, str], stdout: Path, stderr: Path, limit_s: float) -> int | None:
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-m", "evalrun", *args], cwd=cwd, env=env,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
        )
    try:
        return child.wait(limit_s)
    except subprocess.TimeoutExpired:
        _signal_group(child.pid, signal.SIGTERM)
        try:
            child.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(child.pid, signal.SIGKILL)
            child.wait()
        return None


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)  # the run leads its own group
    except ProcessLookupError:
        pass


# -- the zygote's side ----------------------------------------------------------


@dataclass(frozen=True)
class Job:
    id: int
    args: list[str]
    cwd: str
    env: dict[str, str]
    stdout: str
    stderr: str


def serve(requests: int, replies: int) -> Job:
    """Fork a child for every request; return only in a child, with its job. Exits when the requests end."""
    children: dict[int, int] = {}  # pid -> job id
    buffer = b""
    open_ = True

    def reply(message: dict[str, Any]) -> None:
        os.write(replies, json.dumps(message).encode() + b"\n")

    def reap(block: bool) -> None:
        while children:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            if pid == 0:
                return
            reply({"id": children.pop(pid), "code": os.waitstatus_to_exitcode(status)})

    def stop(signum: int, frame: object) -> None:
        for pid in children:
            _signal_group(pid, signal.SIGKILL)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while open_ or children:
        readable, _, _ = select.select([requests] if open_ else [], [], [], POLL_S if children else None)
        if readable:
            chunk = os.read(requests, 1 << 16)
            open_ = bool(chunk)
            buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            job = Job(**json.loads(line))
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                os.close(requests)
                os.close(replies)
                return job
            children[pid] = job.id
            reply({"id": job.id, "pid": pid})
        reap(block=not open_)
    sys.exit(0)


def become_evalrun(job: Job) -> None:
    """In the forked child: set up as ``python -m evalrun ARGS`` would be, and run it."""
    import runpy

    os.setsid()
    for fd, path, flags in (  # first, so that any failure below lands in the run's own stderr
        (0, os.devnull, os.O_RDONLY),
        (1, job.stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, job.stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o644)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
    os.chdir(job.cwd)
    os.environ.clear()
    os.environ.update(job.env)
    sys.argv = ["-m", *job.args]  # runpy puts the module's path first, as -m does
    sys.path[0] = os.getcwd()
    runpy.run_module("evalrun", run_name="__main__", alter_sys=True)


def main() -> None:
    replies = os.dup(1)  # the pipe to the scorer; fd 1 itself points nowhere until a child sets it
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    # What ``python -m evalrun t1`` imports before it reads a manifest: the children start past it.
    import evalrun.cli  # noqa: F401
    import evalrun.commands.run  # noqa: F401

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # renamed or absent in this evalrun: its runs import what they need themselves
            pass

    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # what was imported stays shared: the collector no longer writes to those pages in each child
    become_evalrun(serve(0, replies))


if __name__ == "__main__":
    main()
