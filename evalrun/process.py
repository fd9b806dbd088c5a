"""The one subprocess helper: run a program with a deadline, return a record.

This module owns how evalrun starts a child and makes sure it stops: program
lookup (so the user reads "program not found: X", never an OSError traceback),
a new session per child, draining stdout and stderr concurrently into bounded
tails, and signalling the whole process group — TERM, a grace period, KILL —
on timeout, on cancel, and after every finish, so no process of an eval
outlives it.

A call is a value in (``ProcessRequest``) and a value out (``ProcessOutcome``).
``run_process`` never raises for anything the child does; only programming
errors (an invalid request) raise.

Known limit: a process that leaves the group on purpose (``setsid``,
``setpgid``) is beyond reach of group signals and is not tracked.
"""

from __future__ import annotations

import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, IO, NamedTuple

from evalrun.procfs import boot_clock_ns, group_members, pipe_writers, start_ticks_between

CHUNK_BYTES = 64 * 1024
# After the child exits, a grandchild may still hold the pipes (a server left
# running, a backgrounded `sleep`). Output the child wrote is normally in the
# pipe already, so a short window collects it without waiting on the stray.
DRAIN_WINDOW_S = 0.3
# How often a set cancel event is noticed while the child is quiet (a CancelEvent wakes us at once instead).
CANCEL_POLL_S = 0.05
# How often the group is re-checked once nothing is left to wake the selector.
GROUP_POLL_S = 0.02
# After SIGKILL, how long to wait for the kernel to tear the group down.
KILL_WAIT_S = 1.0


@dataclass(frozen=True)
class ProcessRequest:
    """One program to run.

    ``shell=True`` runs ``["/bin/sh", "-c", " ".join(argv)]``: a one-element
    argv is the script as written; several elements are joined with single
    spaces and *not* quoted, so shell syntax in them (``|``, ``&&``, ``$VAR``)
    keeps its meaning. No program lookup is done for shell commands; a missing
    command shows as the shell's own exit status 127.
    """

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]  # the complete environment for the child
    timeout: float  # seconds; the deadline for the whole process group
    shell: bool = False
    grace: float = 2.0  # seconds between SIGTERM and SIGKILL to the group
    tail_bytes: int = 64 * 1024  # how much of the end of each stream to keep
    stdout_path: Path | None = None  # stdout bytes are also streamed here...
    stdout_limit: int | None = None  # ...at most this many; the rest is read (the child never blocks), not saved
    sandbox: Any = None  # an evalrun.sandbox.Sandbox: the program starts from its restricted thread

    def __post_init__(self) -> None:
        # Accept lists and str paths from callers, store the declared types (one request per scorer: what is of
        # its type already is kept, not copied).
        if type(self.argv) is not tuple:
            object.__setattr__(self, "argv", tuple(self.argv))
        if not isinstance(self.cwd, Path):
            object.__setattr__(self, "cwd", Path(self.cwd))
        if self.stdout_path is not None and not isinstance(self.stdout_path, Path):
            object.__setattr__(self, "stdout_path", Path(self.stdout_path))
        if not self.argv or not all(isinstance(a, str) for a in self.argv):
            raise ValueError(f"argv must be a non-empty sequence of str, got {self.argv!r}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0, got {self.timeout!r}")
        if self.grace < 0:
            raise ValueError(f"grace must be >= 0, got {self.grace!r}")
        if self.tail_bytes <= 0:
            raise ValueError(f"tail_bytes must be > 0, got {self.tail_bytes!r}")


class ProcessOutcome(NamedTuple):
    """What became of one ``ProcessRequest``.

    ``timed_out`` and ``cancelled`` mean the child itself was stopped by us;
    a stray grandchild terminated after the child exited on its own sets
    neither. ``start_error`` says why the program could not start ("program
    not found", "program not executable", "working directory not found", an
    OSError from starting); when it is set, ``exit_code`` is None.
    """

    argv: tuple[str, ...]
    exit_code: int | None  # None: never started; negative: killed by that signal
    timed_out: bool
    cancelled: bool
    start_error: str | None
    duration_s: float
    stdout_tail: bytes
    stderr_tail: bytes
    stdout_bytes: int  # total bytes seen, not just the tail
    stderr_bytes: int
    pid: int | None = None
    # Set when stdout_path could not be written completely (disk full, ...).
    stdout_path_error: str | None = None
    # Processes outside the child's group that held its output after it exited ("pid 123 (sleep)"): stopped.
    escaped: tuple[str, ...] = ()

    def text_tail(self) -> str:
        """The stdout then stderr tails as text; undecodable bytes are shown escaped."""
        parts = [
            _decode_tail(name, tail, total)
            for name, tail, total in (
                ("stdout", self.stdout_tail, self.stdout_bytes),
                ("stderr", self.stderr_tail, self.stderr_bytes),
            )
            if tail
        ]
        return "\n".join(p.rstrip("\n") for p in parts) + ("\n" if parts else "")


class CancelEvent(threading.Event):
    """A cancel flag that also wakes every ``run_process`` waiting on it, so none has to poll it.

    A plain ``threading.Event`` works too: it is checked every CANCEL_POLL_S,
    which costs a wake-up of every supervising thread that often while its
    child runs. Close it once nothing waits on it any more.
    """

    def __init__(self) -> None:
        super().__init__()
        self._read_fd, self._write_fd = os.pipe()  # not inherited: os.pipe's ends are close-on-exec
        os.set_blocking(self._write_fd, False)

    def set(self) -> None:
        super().set()
        try:
            os.write(self._write_fd, b"!")  # stays readable: every selector that watches it wakes
        except OSError:
            pass  # full (set before) or closed: the flag itself is set either way

    def fileno(self) -> int:
        return self._read_fd

    def close(self) -> None:
        for fd in (self._read_fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


def _decode_tail(name: str, tail: bytes, total: int) -> str:
    dropped = total - len(tail)
    if not dropped:
        return tail.decode("utf-8", errors="backslashreplace")
    # The cut may land inside a UTF-8 sequence; skip its continuation bytes so
    # the tail does not open with noise.
    start = 0
    while start < min(3, len(tail)) and 0x80 <= tail[start] <= 0xBF:
        start += 1
    text = tail[start:].decode("utf-8", errors="backslashreplace")
    return f"[... {dropped + start} earlier bytes of {name} not kept ...]\n{text}"


def run_process(
    request: ProcessRequest,
    cancel: threading.Event | None = None,
    *,
    on_spawned: Callable[[int, int | None], None] | None = None,
) -> ProcessOutcome:
    """Run one program to completion, deadline, or cancel; never raise for the child.

    ``on_spawned(pid, start_ticks)`` is called as soon as the child exists (its pid is its group id), e.g. to
    record it so a later run can stop it if we are killed, with the child's start time as ``/proc/<pid>/stat``
    gives it when the start itself told it (None: read it there); by the time ``run_process`` returns, the
    group is gone.
    """
    if not os.path.isdir(request.cwd):
        return _not_started(request, f"working directory not found: {request.cwd}")
    if request.shell:
        argv: list[str] = ["/bin/sh", "-c", " ".join(request.argv)]
        executable = "/bin/sh"
    else:
        resolved, problem = resolve_program(request.argv[0], request.cwd, request.env)
        if resolved is None:
            return _not_started(request, problem)
        argv, executable = list(request.argv), resolved
        if argv[0] in PYTHON_NAMES:  # evalrun's interpreter by its path, so the child finds its virtualenv (as spawn)
            argv[0] = sys.executable
    if cancel is not None and cancel.is_set():
        return _not_started(request, None, cancelled=True)

    sink: BinaryIO | None = None
    if request.stdout_path is not None:
        try:
            sink = open(request.stdout_path, "wb")  # noqa: SIM115 - closed in _supervise
        except OSError as exc:
            return _not_started(request, f"cannot write stdout to {request.stdout_path}: {exc.strerror}")

    started = time.monotonic()
    # The pipes are made here and handed over as descriptors: the same pipes Popen would make, without its
    # file objects, which the supervisor never uses (it reads the descriptors).
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    try:
        proc: subprocess.Popen[bytes] | _Spawned | None = None
        if request.sandbox is None:
            proc = _posix_spawn(argv, executable, request.cwd, request.env, out_write, err_write)
        if proc is None:
            proc = spawn(argv, request.cwd, request.env, executable=executable, stdout=out_write, stderr=err_write,
                         sandbox=request.sandbox)
    except (OSError, ValueError) as exc:  # ValueError: a variable's name or value the system cannot pass (a NUL)
        os.close(out_read)
        os.close(err_read)
        if sink is not None:
            sink.close()
        return _not_started(request, f"could not start {request.argv[0]}: {getattr(exc, 'strerror', None) or exc}")
    finally:
        os.close(out_write)  # the child has its own copies: EOF comes when the last holder closes them
        os.close(err_write)
    if on_spawned is not None:
        try:
            on_spawned(proc.pid, getattr(proc, "start_ticks", None))
        except BaseException:
            os.close(out_read)
            os.close(err_read)
            terminate_group(proc.pid, request.grace, leader=proc)
            raise
    return _supervise(proc, out_read, err_read, request, cancel, sink, started)


def spawn(
    argv: list[str] | tuple[str, ...],
    cwd: Path,
    env: Mapping[str, str],
    *,
    executable: str | None = None,
    stdout: int | IO[Any] | None = subprocess.DEVNULL,
    stderr: int | IO[Any] | None = subprocess.DEVNULL,
    sandbox: Any = None,
    **extra: Any,
) -> subprocess.Popen[bytes]:
    """Start a program the one way evalrun starts programs: in a session of its own, no stdin.

    Its own session makes it lead its own process group, so one ``killpg``
    (``terminate_group``) reaches every process it starts. Raises OSError when
    it cannot start; ``executable`` is the resolved path (``resolve_program``),
    while argv[0] stays as the user wrote it — except ``python``, which becomes
    evalrun's interpreter's path, so the child finds its virtualenv from argv[0].
    ``sandbox`` (``evalrun.sandbox.Sandbox``): started from that restricted thread, so the program and all
    it starts inherit its seccomp filter and Landlock rules.
    """
    argv = list(argv)
    if argv[0] in PYTHON_NAMES:
        argv[0] = executable = sys.executable
    if sandbox is not None:
        return sandbox.call(lambda: spawn(argv, cwd, env, executable=executable, stdout=stdout, stderr=stderr, **extra))
    return subprocess.Popen(
        argv,
        executable=executable,
        cwd=cwd,
        env=env if type(env) is dict else dict(env),  # Popen only reads it
        stdin=_devnull(),
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        bufsize=0,
        **extra,
    )


def terminate_group(
    pgid: int,
    grace: float,
    *,
    leader: subprocess.Popen[bytes] | _Spawned | None = None,
    leader_signal: signal.Signals | None = None,
) -> bool:
    """Stop every process of group ``pgid``: TERM, wait up to ``grace`` s, KILL.

    Returns once the group has no live member (zombies waiting for a parent
    that never reaps them count as gone) or KILL_WAIT_S after the KILL; True
    when the KILL was needed. Pass ``leader`` if you own the Popen of the group
    leader, so it is reaped properly while we wait. ``leader_signal`` asks only
    the leader, with that signal, instead of TERMing the group: for a server
    that shuts its own children down (PostgreSQL's postmaster on SIGINT).
    """
    if leader_signal is not None:
        try:
            os.kill(pgid, leader_signal)  # the group leader's pid is the group id
        except (ProcessLookupError, PermissionError):
            pass  # the leader is gone; its group may not be, so wait and KILL as usual
    elif not _signal_group(pgid, signal.SIGTERM):
        return False
    if _wait_group_gone(pgid, time.monotonic() + grace, leader):
        return False
    if not _signal_group(pgid, signal.SIGKILL):
        return False
    _wait_group_gone(pgid, time.monotonic() + KILL_WAIT_S, leader)
    return True


_devnull_fd: int | None = None
_devnull_lock = threading.Lock()


def _devnull() -> int:
    """One descriptor of /dev/null (read-write, as ``subprocess.DEVNULL``'s), opened once: every child's stdin.

    Close-on-exec, so no child keeps it beyond its own copy as fd 0; Popen leaves a descriptor it is given open.
    """
    global _devnull_fd
    if _devnull_fd is None:
        with _devnull_lock:
            if _devnull_fd is None:
                _devnull_fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    return _devnull_fd


# --- posix_spawn ----------------------------------------------------------
#
# Popen spends most of a scorer's start in Python: it encodes the whole environment variable by variable
# (two calls a variable: a scorer's start made about 700 Python calls, more than the rest of running and
# judging it), then wraps the pipes in file objects. os.posix_spawn takes the environment as it is, in C,
# and starts the child the way Popen does on Linux (vfork, then exec). It cannot change the child's
# working directory, so the calling thread gets a working directory of its own (unshare(CLONE_FS): its cwd
# and umask stop being shared with the other threads) and changes into the eval's folder around the call.
# The child is what Popen makes: its own session (setsid) and process group, /dev/null and the two pipes
# as fds 0-2, SIGPIPE and SIGXFSZ back to their defaults (Popen's restore_signals), and no other
# descriptor (Popen's close_fds): evalrun's own are close-on-exec already (PEP 446), and before each
# start one close_range(CLOSE_RANGE_CLOEXEC) call makes any other (one evalrun was started with, one
# made inheritable on purpose) close-on-exec too; no child evalrun starts ever inherits them anyway.
# Where any of that is missing (not Linux, unshare or close_range refused by a seccomp profile or too
# old a kernel, a C library without POSIX_SPAWN_SETSID) Popen starts the child, as before.

_RESTORED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))
_spawn_here = threading.local()  # .home: the thread's working directory once it has one of its own
_posix_spawn_works = sys.platform.startswith("linux") and hasattr(os, "posix_spawn")
_libc: Any = None
_CLONE_FS = 0x200


_close_range_args: tuple[Any, ...] = ()


def _close_range_cloexec() -> int:
    """close_range(3, ~0, CLOSE_RANGE_CLOEXEC): every descriptor above 2 close-on-exec; 0, or -1 (the errno)."""
    global _close_range_args
    if not _close_range_args:
        import ctypes

        # 436 on every Linux architecture: close_range came after the syscall tables were unified.
        _close_range_args = (ctypes.c_long(436), ctypes.c_uint(3), ctypes.c_uint(0xFFFFFFFF), ctypes.c_uint(4))
    return int(_libc.syscall(*_close_range_args))


class _Spawned:
    """A child started by ``os.posix_spawn``: what supervision asks of a Popen (``pid``, ``returncode``,
    ``poll``, ``wait``), with Popen's answers (a child reaped elsewhere reads as exit 0)."""

    __slots__ = ("pid", "returncode", "start_ticks")

    def __init__(self, pid: int, start_ticks: int | None = None) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.start_ticks = start_ticks  # what /proc/<pid>/stat says, when the spawn's clock readings tell it

    def poll(self) -> int | None:
        if self.returncode is None:
            self._reap(os.WNOHANG)
        return self.returncode

    def wait(self) -> int:
        while self.returncode is None:
            self._reap(0)
        return self.returncode

    def _reap(self, flags: int) -> None:
        try:
            pid, status = os.waitpid(self.pid, flags)
        except ChildProcessError:
            self.returncode = 0
            return
        if pid == self.pid:
            self.returncode = os.waitstatus_to_exitcode(status)  # no WUNTRACED: a stopped child is never reported


def _posix_spawn(
    argv: list[str], executable: str, cwd: Path, env: Mapping[str, str], stdout: int, stderr: int
) -> _Spawned | None:
    """Start ``argv`` as ``spawn`` does, by ``os.posix_spawn``; None where this thread cannot (Popen then does).

    Raises OSError when the program cannot start, as Popen does."""
    global _posix_spawn_works
    if not _posix_spawn_works:
        return None
    home = getattr(_spawn_here, "home", None)
    if home is None:
        home = _own_working_directory()
        if home is None:
            return None
    devnull = _devnull()
    if _close_range_cloexec() != 0:
        _posix_spawn_works = False  # ENOSYS (Linux < 5.11) or EPERM: Popen closes what it must itself
        return None
    os.chdir(cwd)
    try:
        before = boot_clock_ns()
        pid = os.posix_spawn(
            executable, argv, env, setsid=True, setsigdef=_RESTORED_SIGNALS,
            file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, stdout, 1),
                          (os.POSIX_SPAWN_DUP2, stderr, 2)],
        )
        after = boot_clock_ns()
    except NotImplementedError:  # no POSIX_SPAWN_SETSID in this C library
        _posix_spawn_works = False
        return None
    except ValueError:  # a variable name posix_spawn refuses and Popen passes on (an empty one): Popen does it
        return None
    finally:
        try:
            os.chdir(home)
        except OSError:
            pass  # gone: this thread only ever uses absolute paths, and the next spawn changes it again
    return _Spawned(pid, start_ticks_between(before, after))


def _own_working_directory() -> str | None:
    """Give the calling thread a working directory (and umask) of its own; its path, or None if refused."""
    global _posix_spawn_works, _libc
    try:
        if _libc is None:
            import ctypes  # local: only a process that starts scorers pays for it

            _libc = ctypes.CDLL(None, use_errno=True)
        if _libc.unshare(_CLONE_FS) != 0:
            _posix_spawn_works = False  # a seccomp profile refusing unshare refuses it to every thread
            return None
        home = os.getcwd()
    except (OSError, AttributeError):
        _posix_spawn_works = False
        return None
    _spawn_here.home = home
    return home


# --- supervision ----------------------------------------------------------


class _Tail:
    """The last ``limit`` bytes of a stream, with its total size.

    Trimmed only when it grows past twice the limit, so trimming is rare; a
    bytearray deletes from its front without copying the rest.
    """

    __slots__ = ("buf", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.buf = bytearray()
        self.limit = limit
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.buf += chunk
        if len(self.buf) > 2 * self.limit:
            del self.buf[: len(self.buf) - self.limit]

    def tail(self) -> bytes:
        return bytes(self.buf[-self.limit :])


_RUNNING, _TERMINATING, _KILLED = "running", "terminating", "killed"
_CANCEL_WAKE = object()  # the selector key's data for a CancelEvent


class _Poller:
    """Waits for any of a few descriptors to be readable: ``epoll`` itself where there is one (Linux), else the
    platform's selector (``kqueue`` on macOS). Each eval makes one; ``epoll`` spares it the selector's objects."""

    __slots__ = ("_data", "_epoll", "_selector")

    def __init__(self) -> None:
        self._data: dict[int, object] = {}
        self._epoll = select.epoll() if _USE_EPOLL else None
        self._selector = None if self._epoll is not None else selectors.DefaultSelector()

    def register(self, fd: int, data: object) -> None:
        if self._epoll is not None:
            self._epoll.register(fd, select.EPOLLIN)
            self._data[fd] = data
        else:
            assert self._selector is not None
            self._selector.register(fd, selectors.EVENT_READ, data)

    def unregister(self, fd: int) -> None:
        if self._epoll is not None:
            self._epoll.unregister(fd)
            del self._data[fd]
        else:
            assert self._selector is not None
            self._selector.unregister(fd)

    def wait(self, timeout: float) -> list[tuple[int, object]]:
        """(descriptor, data) of each readable one (a closed write end counts), within ``timeout`` seconds."""
        if self._epoll is not None:
            data = self._data
            return [(fd, data[fd]) for fd, _ in self._epoll.poll(timeout, len(data) or 1)]
        assert self._selector is not None
        return [(key.fd, key.data) for key, _ in self._selector.select(timeout)]

    def close(self) -> None:
        if self._epoll is not None:
            self._epoll.close()
        else:
            assert self._selector is not None
            self._selector.close()


_USE_EPOLL = hasattr(select, "epoll")


def _supervise(
    proc: subprocess.Popen[bytes] | _Spawned,
    out_fd: int,
    err_fd: int,
    request: ProcessRequest,
    cancel: threading.Event | None,
    sink: BinaryIO | None,
    started: float,
) -> ProcessOutcome:
    """Drain ``out_fd`` and ``err_fd`` (the read ends of the child's stdout and stderr, closed here) until the
    child's group is gone, stopping it at the deadline or on cancel."""
    pgid = proc.pid  # start_new_session: the leader's pid is the group id
    out, err = _Tail(request.tail_bytes), _Tail(request.tail_bytes)
    sel = _Poller()
    sel.register(out_fd, out)
    sel.register(err_fd, err)
    pipes_open = 2
    # A pidfd wakes the selector the moment the child exits, even when a
    # grandchild keeps the pipes open, so exit is noticed without polling.
    pidfd = _open_pidfd(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, None)
    # A CancelEvent wakes the selector when it is set; a plain Event is polled.
    poll_cancel = cancel is not None and not isinstance(cancel, CancelEvent)
    if isinstance(cancel, CancelEvent):
        sel.register(cancel.fileno(), _CANCEL_WAKE)

    deadline = started + request.timeout
    stage = _RUNNING
    escalate_at = 0.0  # _TERMINATING: when to KILL; _KILLED: when to give up
    escaped: list[tuple[int, str]] = []  # holders of the output outside the group, stopped with it
    exited_at: float | None = None
    timed_out = cancelled = False
    sink_error: str | None = None
    saved = 0  # stdout bytes written to the sink
    finished = False
    try:
        while True:
            if pidfd is None and proc.returncode is None:
                proc.poll()
            now = time.monotonic()
            leader_done = proc.returncode is not None
            if leader_done and exited_at is None:
                exited_at = now
            settled = leader_done and pipes_open == 0

            if stage == _RUNNING:
                stop = False
                if not leader_done and now >= deadline:
                    stop = timed_out = True
                elif cancel is not None and cancel.is_set():
                    stop, cancelled = True, not leader_done
                elif exited_at is not None and (pipes_open == 0 or now >= exited_at + DRAIN_WINDOW_S):
                    if settled and not _group_alive(pgid, reap=True):
                        break
                    stop = True  # a grandchild outlived the child: end it
                    if pipes_open:  # and one that left the group (setsid, a daemon) may hold the output
                        escaped = _escaped_writers((out_fd, err_fd), pgid)
                if stop:
                    _signal_group(pgid, signal.SIGTERM)
                    _signal_each(escaped, signal.SIGTERM)
                    stage, escalate_at = _TERMINATING, now + request.grace
            elif settled and not _group_alive(pgid, reap=True):
                break
            elif now >= escalate_at:
                if stage == _KILLED:
                    break  # something outside our reach holds on; stop waiting
                _signal_group(pgid, signal.SIGKILL)
                _signal_each(escaped, signal.SIGKILL)
                stage, escalate_at = _KILLED, now + KILL_WAIT_S

            wake = [escalate_at] if stage != _RUNNING else []
            if stage == _RUNNING:
                wake.append(deadline if exited_at is None else exited_at + DRAIN_WINDOW_S)
                if poll_cancel:
                    wake.append(now + CANCEL_POLL_S)
            elif settled:
                wake.append(now + GROUP_POLL_S)  # nothing left to wake the selector
            if pidfd is None and not leader_done:
                wake.append(now + (0.005 if pipes_open == 0 else CANCEL_POLL_S))

            for fd, tail in sel.wait(max(0.0, min(wake) - now)):
                if tail is _CANCEL_WAKE:
                    sel.unregister(fd)  # it stays readable: noticed once, at the top of the loop
                    continue
                if tail is None:
                    sel.unregister(fd)
                    proc.wait()  # the pidfd is readable: the child is a zombie, this is instant
                    continue
                chunk = os.read(fd, CHUNK_BYTES)
                if not chunk:
                    sel.unregister(fd)
                    pipes_open -= 1
                    continue
                assert isinstance(tail, _Tail)
                tail.add(chunk)
                if tail is out and sink is not None and sink_error is None:
                    if request.stdout_limit is not None:  # past the limit nothing is saved: disk is bounded too
                        chunk = chunk[: max(0, request.stdout_limit - saved)]
                    try:
                        if chunk:
                            sink.write(chunk)
                            saved += len(chunk)
                    except OSError as exc:
                        sink_error = f"cannot write stdout to {request.stdout_path}: {exc.strerror}"
        finished = True
    finally:
        if not finished:
            # KeyboardInterrupt or a bug: still leave no process behind.
            terminate_group(pgid, request.grace, leader=proc)
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        os.close(out_fd)
        os.close(err_fd)
        if sink is not None:
            try:
                sink.close()
            except OSError as exc:
                sink_error = sink_error or f"cannot write stdout to {request.stdout_path}: {exc.strerror}"
    proc.poll()
    return ProcessOutcome(
        argv=request.argv,
        exit_code=proc.returncode,
        timed_out=timed_out,
        cancelled=cancelled,
        start_error=None,
        duration_s=time.monotonic() - started,
        stdout_tail=out.tail(),
        stderr_tail=err.tail(),
        stdout_bytes=out.total,
        stderr_bytes=err.total,
        pid=proc.pid,
        stdout_path_error=sink_error,
        escaped=tuple(f"pid {pid} ({name})" for pid, name in escaped),
    )


def _not_started(request: ProcessRequest, problem: str | None, *, cancelled: bool = False) -> ProcessOutcome:
    return ProcessOutcome(
        argv=request.argv,
        exit_code=None,
        timed_out=False,
        cancelled=cancelled,
        start_error=problem,
        duration_s=0.0,
        stdout_tail=b"",
        stderr_tail=b"",
        stdout_bytes=0,
        stderr_bytes=0,
    )


# --- program lookup -------------------------------------------------------


# "python" as a program means the interpreter evalrun runs under, as in nox and
# tox: scorers, services and probes get the venv that has evalrun's SDK, not
# whatever "python" the PATH happens to find first.
PYTHON_NAMES = ("python", "python3")


def resolve_program(name: str, cwd: Path, env: Mapping[str, str]) -> tuple[str | None, str]:
    """The absolute path to execute for ``name``, or None and the reason ("program not found: X").

    The one program lookup of evalrun. Resolved as the child would see it: a
    name with a slash relative to the child's cwd, a bare name on the child's
    PATH (relative PATH entries, and empty ones, which mean ".", also relative
    to the child's cwd); ``python``/``python3`` is evalrun's own interpreter.
    """
    if name in PYTHON_NAMES:
        return sys.executable, ""
    base = os.path.abspath(cwd)
    if "/" in name:
        candidate = os.path.join(base, name)  # an absolute name replaces base
        if not os.path.exists(candidate):
            return None, f"program not found: {name}"
        if os.path.isdir(candidate) or not os.access(candidate, os.X_OK):
            return None, f"program not executable: {name}"
        return candidate, ""
    dirs = [os.path.join(base, d) for d in env.get("PATH", os.defpath).split(os.pathsep)]
    found = shutil.which(name, path=os.pathsep.join(dirs))
    if found is not None:
        return os.path.abspath(found), ""
    if any(os.path.isfile(os.path.join(d, name)) for d in dirs):
        return None, f"program not executable: {name}"
    return None, f"program not found: {name}"


# --- the process group ----------------------------------------------------


def _open_pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)  # Linux >= 5.3
    except (AttributeError, OSError):
        return None


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    """Send ``sig`` to the group; False when there is nobody we may signal."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _escaped_writers(pipes: tuple[int, int], pgid: int) -> list[tuple[int, str]]:
    """Processes outside the child's group that hold its stdout or stderr pipe (``pipes``: our read ends) open.

    Only the child's descendants can hold those pipes (evalrun gives them to
    no one else), so one that left the group with ``setsid`` is still the
    scorer's, and is stopped with it rather than waited on.
    """
    inodes = {os.fstat(fd).st_ino for fd in pipes}
    return [(stat.pid, name) for stat, name in pipe_writers(inodes, os.getpid()) if stat.pgid != pgid]


def _signal_each(pids: list[tuple[int, str]], sig: signal.Signals) -> None:
    for pid, _ in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap_strays(pgid: int) -> None:
    """Reap exited members of the group that were re-parented to us.

    Happens when evalrun is PID 1 in a container or a child subreaper. Only
    called once the leader is reaped, so no Popen's status is taken from it.
    """
    while True:
        try:
            pid, _ = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _group_alive(pgid: int, *, reap: bool = False) -> bool:
    """Whether the group has a member that is not a zombie.

    ``reap`` first reaps members re-parented to us; only pass it once the
    leader is reaped.
    """
    if reap:
        _reap_strays(pgid)
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # killpg also reaches zombies, and an init that never reaps (a bare
    # container, some VMs) keeps them forever; /proc tells them apart.
    members = group_members(pgid)
    return True if members is None else bool(members)  # no /proc: alive; the caller's deadline bounds the wait


def _wait_group_gone(pgid: int, until: float, leader: subprocess.Popen[bytes] | _Spawned | None) -> bool:
    delay = 0.001
    while True:
        reap = leader is not None and leader.poll() is not None
        if not _group_alive(pgid, reap=reap):
            return True
        now = time.monotonic()
        if now >= until:
            return False
        time.sleep(min(delay, until - now))
        delay = min(delay * 2, GROUP_POLL_S)


