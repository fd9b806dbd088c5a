"""Isolation: t1 and t2 run inside a network namespace that has only loopback, or under the fallback.

"t1 needs no network" was a comment until something enforced it. Where the
system allows it (root, or unprivileged user namespaces), the run phase of t1
and t2 (probes, the services evalrun starts, the replay proxy, the scorers) runs
inside a new network namespace with its own ``lo`` up: they all share that
loopback, and nothing else is reachable. A listener on the host, even on the
host's 127.0.0.1, is not. The rest of evalrun stays on the host network: it
compares, writes the results and reports, and appends to the history (a
PostgreSQL history on another machine stays reachable).

Where no namespace can be made (non-root without user namespaces: GitHub's
``ubuntu-24.04`` runners), the scorers and t2's services start under the
fallback instead (``evalrun.sandbox``: seccomp, and Landlock's TCP port rules in
t2), the rest of the run phase on the host network (``fallback_for``).

Per tier (``[tiers.t1]``): ``network = "loopback"`` (the default for t1 and t2:
isolated where possible, else a warning ``network: not isolated: <why>``) or
``"host"`` (never isolated), and ``require_isolation = true`` to make "cannot
isolate" (neither mechanism) a one-line exit 2. t3 is live and never isolated.
The outcome is the run's ``network`` (``NetworkIsolation``): its header line,
and a field of the results that every report shows.

How, as root: a network namespace belongs to a thread, and what a thread starts
inherits it. The thread that runs the phase calls ``unshare(CLONE_NEWNET)``,
raises ``lo`` with ``SIOCSIFFLAGS``, runs the body, and goes back with
``setns`` to the namespace it came from; nothing is forked (``_run_here``).
Otherwise ``fork``: the child calls ``unshare(CLONE_NEWUSER | CLONE_NEWNET)``
(which a threaded process cannot) with its own uid and gid mapped to themselves
(so files it writes stay the user's, and PostgreSQL does not see root), raises
``lo``, reports success on a pipe, then runs the body and pickles what it
returned (or raised) to the parent. The parent forwards SIGINT and SIGTERM to
the child, which is in a process group of its own, so a Ctrl-C reaches it once
(``_run_forked``).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import socket
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from evalrun.errors import UsageError

if TYPE_CHECKING:
    from evalrun.manifest import Manifest
    from evalrun.results import EvalResult, NetworkIsolation

T = TypeVar("T")

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


class NetworkPolicy(NamedTuple):
    """What the manifest asks of a tier's network."""

    tier: str
    isolate: bool  # try to isolate
    required: bool  # cannot isolate: exit 2
    why_not: str = ""  # when not trying: why


def network_policy(manifest: Manifest, tier: str) -> NetworkPolicy:
    if tier not in ("t1", "t2"):
        return NetworkPolicy(tier, False, False, f"{tier} is live and never isolated")
    config = manifest.tier(tier)
    if config.network == "host":
        return NetworkPolicy(tier, False, False, f'tiers.{tier} sets network = "host"')
    return NetworkPolicy(tier, True, config.require_isolation)


def header(network: NetworkIsolation) -> str:
    """The run's header line (``network: isolated (namespace), except ...`` / ``network: not isolated: <why>``)."""
    from evalrun.reports_out.describe import network_line

    return network_line(network)


def not_isolated(why: str) -> NetworkIsolation:
    from evalrun.results import NetworkIsolation

    return NetworkIsolation(isolated=False, reason=why)


def isolated(mechanism: str) -> NetworkIsolation:
    from evalrun.results import NetworkIsolation

    return NetworkIsolation(isolated=True, mechanism=mechanism)


def combined_network(networks: list[NetworkIsolation | None]) -> NetworkIsolation | None:
    """The network of runs recorded as one (the shards of a merge, the bites of a tier): theirs when they agree;
    else the first that was not isolated (the whole was not, in part); else None (isolated by different
    mechanisms, or one not recorded by an older evalrun: nothing is claimed)."""
    if networks and all(n == networks[0] for n in networks):
        return networks[0]
    return next((n for n in networks if n is not None and not n.isolated), None)


def fallback_for(tier: str) -> tuple[str | None, str | None]:
    """Where no namespace can be made: the scorers' fallback (``evalrun.sandbox``) this machine offers the tier,
    tried for real on a thread of its own (``(mechanism, None)``), or why there is none (``(None, why)``)."""
    from evalrun.sandbox import Rules, Sandbox

    sandbox, why = Sandbox.open(Rules(tier, None if tier == "t1" else ()))
    if sandbox is None:
        return None, why
    sandbox.close()
    return sandbox.mechanism, None


def refuse(policy: NetworkPolicy, why_not: str) -> UsageError:
    return UsageError(
        f"{policy.tier}: require_isolation = true, but the run cannot be isolated: {why_not}; "
        f"run as root, allow unprivileged user namespaces, or use Linux 6.7 or later with Landlock enabled; "
        f"or drop require_isolation from [tiers.{policy.tier}]"
    )


# --------------------------------------------------------------------------- entering the namespace


def enter_loopback_namespace() -> str | None:
    """Move this thread (as root) or this single-threaded process into a new network namespace with ``lo`` up;
    None, or why not."""
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux only"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        unshare = libc.unshare
    except (OSError, AttributeError) as exc:
        return f"no unshare() in the C library ({exc})"
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        if unshare(CLONE_NEWNET) != 0:
            return f"unshare(CLONE_NEWNET) failed as root: {os.strerror(ctypes.get_errno())}"
    else:
        if unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            code = ctypes.get_errno()
            hint = ("user namespaces are limited to 0 here (user.max_user_namespaces)" if code == errno.ENOSPC
                    else "unprivileged user namespaces are not allowed (kernel.unprivileged_userns_clone, "
                         "AppArmor, or a container's seccomp)")
            return f"uid {uid} cannot create a network namespace: unshare: {os.strerror(code)}; {hint}"
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as fh:
                    fh.write(text + "\n")
        except OSError as exc:
            return f"cannot map uid {uid} into the new user namespace: {exc.strerror or exc}"
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            request = struct.pack("16sH22x", b"lo", 0)
            flags = struct.unpack("16sH22x", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | _IFF_UP))
    except OSError as exc:
        return f"cannot bring up loopback in the new namespace: {exc.strerror or exc}"
    return None


# --------------------------------------------------------------------------- running a body there


def run_isolated(body: Callable[[], T], on_entered: Callable[[], None]) -> tuple[bool, T | None, str | None]:
    """Run ``body`` inside a loopback-only network namespace: ``(True, what body returned, None)``; what it
    raised is raised here. When the namespace cannot be made: ``(False, None, why)``, and nothing ran.

    As root (``CAP_SYS_ADMIN``) the calling thread itself enters the namespace, runs ``body`` and goes back
    to the host's (``setns``): a network namespace belongs to a thread, and the threads and processes it
    starts inherit it, so everything ``body`` starts is inside while the rest of evalrun is not. Otherwise
    (a user namespace is needed, which only a single-threaded process can enter) ``body`` runs in a forked
    child (``_run_forked``).
    """
    if not sys.platform.startswith("linux"):  # asked before any fork: macOS forks from a threaded process badly
        return False, None, "network namespaces are Linux only"
    if os.geteuid() == 0:
        host = _open_own_namespace()
        if host is not None:
            return _run_here(body, on_entered, host)
    return _run_forked(body, on_entered)


def _open_own_namespace() -> int | None:
    """A descriptor of the calling thread's network namespace, to go back to; None where there is none."""
    try:
        return os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _run_here(body: Callable[[], T], on_entered: Callable[[], None], host: int) -> tuple[bool, T | None, str | None]:
    try:
        why = enter_loopback_namespace()
        if why is not None:
            return False, None, why
        try:
            on_entered()
            return True, body(), None
        finally:
            _go_back(host)
    finally:
        os.close(host)


def _go_back(host: int) -> None:
    """Return the calling thread to the namespace ``host`` names: never leave evalrun's own work isolated."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(host, CLONE_NEWNET) != 0:
        raise RuntimeError(f"cannot return to the host's network namespace: setns: {os.strerror(ctypes.get_errno())}")


def _run_forked(body: Callable[[], T], on_entered: Callable[[], None]) -> tuple[bool, T | None, str | None]:
    """Run ``body`` in a forked child inside a loopback-only namespace.

    Returns ``(True, what body returned, None)``; what it raised is raised here.
    When the namespace cannot be made: ``(False, None, why)``, and nothing ran.
    The child answers on a pipe (no file to leave behind when evalrun is
    killed): a status frame (``ok`` or why not), then the pickled outcome.
    """
    # Local, and before the fork: only this fallback pickles, and a run in a namespace entered by a thread of
    # evalrun's own process (as root) never loads pickle (bench/bench_overhead.py, the fixed start).
    import pickle

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    read_end, write_end = os.pipe()
    parent = os.getpid()
    # Only the main thread can forward signals; from another (a bite's worker) the child stays in
    # evalrun's process group, where a terminal's Ctrl-C reaches it directly.
    forwards = threading.current_thread() is threading.main_thread()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(body, on_entered, write_end, parent, own_group=forwards)
    os.close(write_end)
    with _forwarding(pid):
        try:
            data = _read_all(read_end)
        finally:
            os.close(read_end)
        code = _wait(pid)
    size = int.from_bytes(data[:4], "big") if len(data) >= 4 else 0
    status, rest = data[4 : 4 + size], data[4 + size :]
    if status != b"ok":
        return False, None, status.decode("utf-8", "replace") or f"the isolated child ended before it could say why (wait status {code})"
    try:
        kind, value = pickle.loads(rest)
    except Exception as exc:  # noqa: BLE001 - a child killed half-way: a truncated pickle raises many kinds
        if code > 0 and os.WIFSIGNALED(code):
            _die_like(os.WTERMSIG(code))  # the child was the run: its death by a signal is evalrun's
        raise RuntimeError(f"the isolated run ended without its results (wait status {code}: {exc})") from None
    if kind == "raise":
        raise value
    return True, value, None


def _child(body: Callable[[], Any], on_entered: Callable[[], None], fd: int, parent: int, own_group: bool) -> None:
    import pickle  # loaded by the parent before the fork (_run_forked)

    code = 0
    try:
        _die_with(parent)
        if own_group:
            try:
                os.setpgid(0, 0)  # the parent forwards signals: a terminal's Ctrl-C reaches this process once
            except OSError:
                pass
        why = enter_loopback_namespace()
        status = b"ok" if why is None else why.encode("utf-8", "replace")[:4000]
        _write_all(fd, len(status).to_bytes(4, "big") + status)
        if why is not None:
            return
        try:
            on_entered()
            outcome: tuple[str, Any] = ("ok", body())
        except BaseException as exc:  # noqa: BLE001 - carried to the parent, raised there
            outcome = ("raise", exc)
        try:
            data = pickle.dumps(outcome)
        except Exception as exc:  # noqa: BLE001 - an exception that does not pickle
            data = pickle.dumps(("raise", RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]} ({exc})")))
        _write_all(fd, data)
    except BaseException:  # noqa: BLE001 - whatever happens, the child never returns into the parent's code
        code = 70
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)


def _die_like(signum: int) -> None:
    """End this process by ``signum``, as the isolated child ended: a SIGKILLed run reads as one, isolated or not."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    try:
        signal.signal(signum, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), signum)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """A SIGKILLed evalrun takes its isolated child along, as it did its own work before: what the child
    started (scorer groups, services) is then a leftover the next run stops, as any killed run's."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(70)


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except InterruptedError:
            continue
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _wait(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return -1


@contextmanager
def _forwarding(pid: int) -> Iterator[None]:
    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    previous: dict[int, Any] = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[signum] = signal.signal(signum, forward)
            except ValueError:  # not the main thread: the child gets no forwarded signal
                pass
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


# --------------------------------------------------------------------------- explaining a failure

_NETWORK_ERRORS = (
    "network is unreachable", "enetunreach", "no route to host", "temporary failure in name resolution",
    "name or service not known", "nodename nor servname", "no address associated with hostname",
    "failed to resolve", "getaddrinfo", "connection refused", "econnrefused", "connecterror", "connection error",
)


_DENIED = ("permission denied", "eacces", "errno 13")


def connection_failed(result: EvalResult, refused: bool = False) -> bool:
    """A failing eval whose words mention a connection error (its message, output, failed checks); ``refused``:
    a refusal too (the fallback's seccomp and Landlock say "permission denied"; in the namespace that means a file)."""
    from evalrun.results import Status

    if result.status not in (Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.SKIPPED):
        return False
    words = " ".join([result.message or "", result.output_tail or "",
                      *(c.message or "" for c in result.checks if not c.passed)]).lower()
    return any(marker in words for marker in (_NETWORK_ERRORS + _DENIED if refused else _NETWORK_ERRORS))


def explain_connections(results: list[EvalResult], hint: Callable[[EvalResult], str | None],
                        refused: bool = False) -> list[EvalResult]:
    """A failing eval whose words mention a connection error gets ``hint(result)`` added to its message."""
    out = []
    for result in results:
        note = hint(result) if connection_failed(result, refused) else None
        if note:
            result = replace(result, message=f"{result.message}; {note}" if result.message else note)
        out.append(result)
    return out
