"""Run a command as uid/gid 65534 (nobody) in a user namespace of its own, for the isolation fallback tests.

    python drop_privilege.py [--no-user-namespaces] [--no-sandbox] -- ARGV...

Must be started as root. It forks; the child enters a new user namespace whose
uids and gids 0-65535 are the host's own (the parent, root on the host, writes
the maps), optionally sets ``user.max_user_namespaces`` to 0 in it (a limit of
that namespace only: the host's setting is untouched), drops to 65534, and
execs ARGV. So evalrun runs as an unprivileged user that cannot create a user
namespace: the real "no permission" case, made without touching the machine.
``--no-sandbox`` also takes the isolation fallback away, as a container's
seccomp profile can: a seccomp filter of its own (x86_64 and aarch64) makes
``prctl(PR_SET_SECCOMP)`` and ``seccomp()`` fail with EPERM and Landlock's
system calls with ENOSYS, for ARGV and all it starts.
The exit status is ARGV's.
"""

import ctypes
import os
import platform
import sys

CLONE_NEWUSER = 0x10000000

# (audit arch, prctl, seccomp) system call numbers; Landlock's are 444-446 on both
ARCHES = {"x86_64": (0xC000003E, 157, 317), "aarch64": (0xC00000B7, 167, 277)}


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


def forbid_sandboxing() -> None:
    """A seccomp filter that refuses every way to install another seccomp filter or a Landlock domain."""
    arch, nr_prctl, nr_seccomp = ARCHES[platform.machine()]
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    prog = [
        (ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, allow),
        (ld, 0, 0, 0),
        (jge, 0, 3, 444), (jge, 2, 0, 447), (ret, 0, 0, enosys), (ret, 0, 0, allow),  # 444-446: Landlock
        (jeq, 0, 1, nr_seccomp), (ret, 0, 0, eperm),
        (jeq, 1, 0, nr_prctl), (ret, 0, 0, allow),
        (ld, 0, 0, 16), (jeq, 0, 1, 22), (ret, 0, 0, eperm), (ret, 0, 0, allow),  # prctl(PR_SET_SECCOMP, ...)
    ]
    filters = (SockFilter * len(prog))(*(SockFilter(*ins) for ins in prog))
    fprog = SockFprog(len(prog), ctypes.cast(filters, ctypes.POINTER(SockFilter)))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(38, 1, None, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot install the filter that forbids sandboxing")


def main() -> int:
    args = sys.argv[1:]
    limit = "--no-user-namespaces" in args[: args.index("--")]
    no_sandbox = "--no-sandbox" in args[: args.index("--")]
    args = args[args.index("--"):]
    assert args[:1] == ["--"], "usage: drop_privilege.py [--no-user-namespaces] [--no-sandbox] -- ARGV..."
    argv = args[1:]
    ready_r, ready_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER) != 0:
                os.write(2, f"unshare(CLONE_NEWUSER): {os.strerror(ctypes.get_errno())}\n".encode())
                os._exit(97)
            os.write(ready_w, b"x")
            os.read(mapped_r, 1)
            if limit:
                with open("/proc/sys/user/max_user_namespaces", "w") as fh:
                    fh.write("0\n")
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            if no_sandbox:
                forbid_sandboxing()
            os.execv(argv[0], argv)
        except BaseException as exc:  # noqa: BLE001
            os.write(2, f"drop_privilege: {exc}\n".encode())
            os._exit(98)
    os.read(ready_r, 1)
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as fh:
            fh.write("0 0 65536\n")
    os.write(mapped_w, b"x")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
