"""The isolation fallback: a seccomp filter and Landlock rules for the scorers, where no namespace can be made.

A network namespace needs root or an unprivileged user namespace; GitHub's
``ubuntu-24.04`` runners run jobs as a non-root user whose user namespaces
AppArmor restricts, and a container often forbids ``unshare``. Two kernel
facilities need no privilege at all, only ``PR_SET_NO_NEW_PRIVS``:

- **seccomp** (a classic BPF filter, Linux 3.5+): in t1 ``socket()`` of
  ``AF_INET``, ``AF_INET6`` or ``AF_PACKET`` fails with ``EACCES``; in t2 only a
  TCP stream socket (``SOCK_STREAM``, protocol 0 or ``IPPROTO_TCP``) may be
  made, so no UDP (no DNS) and no SCTP. ``io_uring_setup`` fails with ``ENOSYS``
  in both (an io_uring can make sockets the filter never sees; libuv and others
  fall back when it is missing). A process of another architecture (x32, i386,
  32-bit ARM) gets ``EPERM`` for every system call.
- **Landlock** (Linux 5.13+; network rules since ABI 4, Linux 6.7; scopes since
  ABI 6, Linux 6.12): in t2 a TCP ``connect`` reaches only the ports given (the
  replay proxy's and the run's own services'); from ABI 6 on, in t1 and t2, an
  abstract unix socket made outside the scorers (D-Bus, X11, systemd's) is out
  of reach.

Both are inherited by what a thread starts and can never be lifted. They apply
to the calling thread only (no ``TSYNC``), so evalrun keeps one thread of its
own restricted and starts every scorer from it (``Sandbox.popen``): nothing is
run between fork and exec (``preexec_fn`` is unsafe in a threaded process), no
wrapper program is exec'd, and a scorer's start costs a hand-off between two
threads. The rest of evalrun, and the replay proxy, stay unrestricted.

Written against the kernel's ABI with ctypes (no dependency): the syscall
numbers of Landlock are the same on every architecture; seccomp's filter checks
the audit architecture (x86_64 and aarch64 are supported; elsewhere the
fallback says it is unavailable).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import queue
import struct
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")

# --------------------------------------------------------------------------- the kernel's numbers

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000

# BPF: ld w abs, jeq k, jge k, and k, ret k
_LD_W_ABS, _JEQ_K, _JGE_K, _ALU_AND_K, _RET_K = 0x20, 0x15, 0x35, 0x54, 0x06

# (audit arch, socket syscall, x32 bit or None)
_ARCHES = {
    "x86_64": (0xC000003E, 41, 0x40000000),
    "aarch64": (0xC00000B7, 198, None),
}
_NR_IO_URING_SETUP = 425  # the same number on x86_64 and aarch64 (the generic table)
_AF_INET, _AF_INET6, _AF_PACKET = 2, 10, 17
_SOCK_STREAM, _SOCK_TYPE_MASK = 1, 0xF
_IPPROTO_TCP = 6

# offsetof(struct seccomp_data, ...): nr 0, arch 4, args[i] 16 + 8 i (the low 32 bits on a little-endian machine)
_OFF_NR, _OFF_ARCH = 0, 4


def _arg(i: int) -> int:
    return 16 + 8 * i


_NR_LANDLOCK_CREATE_RULESET, _NR_LANDLOCK_ADD_RULE, _NR_LANDLOCK_RESTRICT_SELF = 444, 445, 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_NET_PORT = 2
_LANDLOCK_ACCESS_NET_CONNECT_TCP = 2
_LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1

EACCES, ENOSYS, EPERM = 13, 38, 1  # Linux's numbers (the filter is for its kernel, wherever this module is imported)


# --------------------------------------------------------------------------- what a tier gets


@dataclass(frozen=True)
class Rules:
    """What the scorers of one run may do on the network.

    ``tcp_ports`` None: no IP socket at all (t1); a tuple: TCP only, and ``connect`` only to those ports (t2).
    """

    tier: str
    tcp_ports: tuple[int, ...] | None = None


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, too old, or not enabled at boot)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(_NR_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(version), 0)


def mechanism(tier: str) -> tuple[str | None, str | None]:
    """``(name, None)``: the fallback this machine offers the tier (``seccomp+landlock`` or ``seccomp``);
    ``(None, why not)`` where there is none."""
    if not sys.platform.startswith("linux"):
        return None, "seccomp and Landlock are Linux only"
    if platform.machine() not in _ARCHES or sys.byteorder != "little":
        return None, f"the seccomp filter knows little-endian x86_64 and aarch64, not {platform.machine()}"
    abi = landlock_abi()
    if tier == "t2" and abi < 4:
        return None, (f"Landlock network rules need Linux 6.7 or later (Landlock ABI 4; this kernel, "
                      f"{platform.release()}, offers {abi or 'none: Landlock is off at boot, or a seccomp profile blocks it'})")
    return ("seccomp+landlock" if abi >= 6 or tier == "t2" else "seccomp"), None


def seccomp_program(rules: Rules, machine: str | None = None) -> list[tuple[int, int, int, int]]:
    """The classic BPF program of the filter, as ``(code, jt, jf, k)`` instructions."""
    arch, nr_socket, x32 = _ARCHES[machine or platform.machine()]
    deny = _RET_K, 0, 0, _SECCOMP_RET_ERRNO | EACCES
    allow = _RET_K, 0, 0, _SECCOMP_RET_ALLOW
    prog: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),
        (_JEQ_K, 1, 0, arch),
        (_RET_K, 0, 0, _SECCOMP_RET_ERRNO | EPERM),  # another architecture's system calls: none
        (_LD_W_ABS, 0, 0, _OFF_NR),
    ]
    if x32 is not None:
        prog += [(_JGE_K, 0, 1, x32), (_RET_K, 0, 0, _SECCOMP_RET_ERRNO | EPERM)]
    prog += [
        (_JEQ_K, 0, 1, _NR_IO_URING_SETUP),
        (_RET_K, 0, 0, _SECCOMP_RET_ERRNO | ENOSYS),
        (_JEQ_K, 1, 0, nr_socket),
        allow,  # any other system call
        (_LD_W_ABS, 0, 0, _arg(0)),  # socket(): the address family
    ]
    if rules.tcp_ports is None:  # t1: no IP socket at all
        return prog + [
            (_JEQ_K, 2, 0, _AF_INET),
            (_JEQ_K, 1, 0, _AF_INET6),
            (_JEQ_K, 0, 1, _AF_PACKET),
            deny,
            allow,  # AF_UNIX, AF_NETLINK, ...
        ]
    return prog + [  # t2: an IP socket only if it is TCP
        (_JEQ_K, 4, 0, _AF_INET),
        (_JEQ_K, 3, 0, _AF_INET6),
        (_JEQ_K, 1, 0, _AF_PACKET),
        allow,  # AF_UNIX, AF_NETLINK, ...
        deny,
        (_LD_W_ABS, 0, 0, _arg(1)),  # the type
        (_ALU_AND_K, 0, 0, _SOCK_TYPE_MASK),  # SOCK_NONBLOCK and SOCK_CLOEXEC are flags above the type
        (_JEQ_K, 1, 0, _SOCK_STREAM),
        deny,
        (_LD_W_ABS, 0, 0, _arg(2)),  # the protocol
        (_JEQ_K, 1, 0, 0),
        (_JEQ_K, 0, 1, _IPPROTO_TCP),
        allow,
        deny,
    ]


# --------------------------------------------------------------------------- restricting the calling thread


def restrict_this_thread(rules: Rules) -> str | None:
    """Restrict the calling thread (and whatever it starts from now on) for good; None, or why it could not."""
    name, why = mechanism(rules.tier)
    if name is None:
        return why
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}"
    abi = landlock_abi()
    if (abi >= 4 and rules.tcp_ports is not None) or abi >= 6:
        why = _landlock(libc, rules, abi)
        if why is not None:
            return why
    return _seccomp(libc, rules)


def _landlock(libc: Any, rules: Rules, abi: int) -> str | None:
    net = _LANDLOCK_ACCESS_NET_CONNECT_TCP if rules.tcp_ports is not None else 0
    scoped = _LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET if abi >= 6 else 0
    attr = struct.pack("=QQQ", 0, net, scoped) if abi >= 6 else struct.pack("=QQ", 0, net)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(_NR_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if fd < 0:
        return f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}"
    try:
        for port in sorted(set(rules.tcp_ports or ())):
            rule = ctypes.create_string_buffer(struct.pack("=QQ", _LANDLOCK_ACCESS_NET_CONNECT_TCP, port), 16)
            if libc.syscall(_NR_LANDLOCK_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(_LANDLOCK_RULE_NET_PORT), rule,
                            ctypes.c_uint32(0)) != 0:
                return f"landlock_add_rule (TCP port {port}): {os.strerror(ctypes.get_errno())}"
        if libc.syscall(_NR_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            return f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}"
    finally:
        os.close(fd)
    return None


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _seccomp(libc: Any, rules: Rules) -> str | None:
    prog = seccomp_program(rules)
    filters = (_SockFilter * len(prog))(*(_SockFilter(*ins) for ins in prog))
    fprog = _SockFprog(len(prog), ctypes.cast(filters, ctypes.POINTER(_SockFilter)))
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"prctl(PR_SET_SECCOMP): {os.strerror(ctypes.get_errno())}"
    return None


# --------------------------------------------------------------------------- the thread that starts scorers


class Sandbox:
    """One restricted thread of evalrun's own, which starts every scorer of a run (``popen``).

    ``Sandbox.open(rules)``: the thread restricted, or why it could not be (``(None, why)``).
    """

    def __init__(self, rules: Rules, name: str) -> None:
        self.rules = rules
        self.mechanism = name
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._ready: Future[str | None] = Future()
        self._closed = False
        self._lock = threading.Lock()  # a job is queued before the end, or refused: none waits forever
        self._thread = threading.Thread(target=self._serve, name=f"evalrun-sandbox-{rules.tier}", daemon=True)

    @classmethod
    def open(cls, rules: Rules) -> tuple[Sandbox | None, str | None]:
        name, why = mechanism(rules.tier)
        if name is None:
            return None, why
        sandbox = cls(rules, name)
        sandbox._thread.start()
        why = sandbox._ready.result()
        if why is not None:
            sandbox._thread.join()
            return None, why
        return sandbox, None

    def _serve(self) -> None:
        try:
            why = restrict_this_thread(self.rules)
        except Exception as exc:  # noqa: BLE001 - a failure to restrict is a reason, never a crash
            why = f"{type(exc).__name__}: {exc}"
        self._ready.set_result(why)
        if why is not None:
            return
        while (job := self._jobs.get()) is not None:
            work, future = job
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(work())
                except BaseException as exc:  # noqa: BLE001 - raised in the caller's thread
                    future.set_exception(exc)

    def call(self, work: Callable[[], T]) -> T:
        """Run ``work`` (which starts a process) in the restricted thread; what it returns or raises.

        After ``close`` (a worker that outlived an interrupted run) it raises OSError: nothing starts unrestricted,
        and nothing waits for a thread that is gone."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise OSError(errno.ESHUTDOWN, "the run's isolated scorer thread has ended")
            self._jobs.put((work, future))
        return future.result()

    def close(self) -> None:
        """End the thread once every start queued before has been served."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._jobs.put(None)
        self._thread.join()

