"""Helpers for tests that start processes themselves: Ctrl-C obeyed, and a user with no home.

A container's arbitrary uid has no $HOME and no passwd entry. A forked child
of this process becomes such a user for real (setuid needs root) and runs a
call in-process: evalrun's modules are already imported, so nothing the
stranger cannot read is needed. Import what the call needs before forking.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

import pytest

from harness.waiting import wait_until


def default_sigint() -> None:
    """``preexec_fn`` for a child that must obey Ctrl-C: run in the background
    (``nohup``, ``cmd &``) pytest inherits SIGINT ignored, and so would it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become a user with no passwd entry")
STRANGER = 54321  # no passwd entry on any machine these tests run on


def as_a_user_with_no_home(call: Callable[[], int]) -> tuple[int, str]:
    """``call()``'s return value as the exit code, and what it printed, run as uid STRANGER without $HOME."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(read)
            sys.stdout = sys.stderr = open(write, "w", encoding="utf-8")  # not pytest's capture
            os.setgroups([])
            os.setgid(STRANGER)
            os.setuid(STRANGER)
            os.environ.pop("HOME", None)
            code = call()
        except BaseException as exc:  # noqa: BLE001 - said, and a distinct exit code
            print(f"{type(exc).__name__}: {exc}")
            code = 98
        finally:
            sys.stdout.flush()
            os._exit(code)
    os.close(write)
    reaped: list[tuple[int, int]] = []
    try:
        reaped = wait_until(lambda: [w for w in [os.waitpid(pid, os.WNOHANG)] if w[0]], within=60, what="the child")
    finally:
        if not reaped:  # not reaped yet: it is still ours to kill
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode("utf-8", "replace")
    return os.waitstatus_to_exitcode(reaped[0][1]), said
