"""Run a command as uid/gid 65534 (nobody) in a user namespace of its own, for the isolation fallback tests.

    python drop_privilege.py [--no-user-namespaces] -- ARGV...

Must be started as root. It forks; the child enters a new user namespace whose
uids and gids 0-65535 are the host's own (the parent, root on the host, writes
the maps), optionally sets ``user.max_user_namespaces`` to 0 in it (a limit of
that namespace only: the host's setting is untouched), drops to 65534, and
execs ARGV. So evalrun runs as an unprivileged user that cannot create a user
namespace: the real "no permission" case, made without touching the machine.
The exit status is ARGV's.
"""

import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000


def main() -> int:
    args = sys.argv[1:]
    limit = args[:1] == ["--no-user-namespaces"]
    if limit:
        args = args[1:]
    assert args[:1] == ["--"], "usage: drop_privilege.py [--no-user-namespaces] -- ARGV..."
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
