"""Another platform, simulated on Linux for every Python process that has this folder on its PYTHONPATH.

``SIMULATED_PLATFORM=macos``: what evalrun finds on a Mac. ``sys.platform`` is
``"darwin"``; there is no ``/proc`` (opening, listing, stat-ing or reading a link
under it fails with ENOENT, as a path that does not exist does); no pidfd
(``os.pidfd_open``), no ``os.unshare``/``os.setns``, no ``os.sched_getaffinity``;
and the C library has no ``unshare``, ``setns``, ``prctl`` or ``seccomp``
(looking them up through ctypes fails as a missing symbol does). ``_scproxy``
(macOS's proxy settings, which urllib imports on darwin) is this folder's stub:
no proxies. Only Python code is affected: ``ps``, PostgreSQL and other programs run as they do.

``SIMULATED_FORK_LOG=PATH`` (macOS only) appends a line to PATH for every
``os.fork`` a simulated process makes.

``SIMULATED_PLATFORM=windows``: ``import fcntl`` fails, as it does on Windows.

The variable and this folder on ``PYTHONPATH`` are inherited, so every process
evalrun starts (a forked or fresh evalrun, a Python scorer) is simulated too.
``harness.simulation.simulated_env`` builds such an environment.
"""

from __future__ import annotations

import os
import sys

_PLATFORM = os.environ.get("SIMULATED_PLATFORM", "")


def _hidden(path: object) -> bool:
    if isinstance(path, int):
        return False
    try:
        text = os.fsdecode(os.fspath(path))  # type: ignore[arg-type]
    except TypeError:
        return False
    if not text.startswith("/"):
        try:
            text = os.path.join(os.getcwd(), text)
        except OSError:  # a removed working folder: the call itself will say so
            return False
    text = os.path.normpath(text)
    return text == "/proc" or text.startswith("/proc/")


def _refusing(real, what: str):
    def wrapper(path, *args, **kwargs):
        if kwargs.get("dir_fd") is None and _hidden(path):  # relative to a folder's descriptor: never /proc here
            raise FileNotFoundError(2, "No such file or directory (simulated: no /proc on this platform)", str(path))
        return real(path, *args, **kwargs)

    wrapper.__name__ = getattr(real, "__name__", what)
    wrapper.__wrapped__ = real
    return wrapper


def _simulate_macos() -> None:
    import builtins
    import io

    import sysconfig

    sysconfig.get_config_vars()  # read now: its module's name is built from sys.platform (zoneinfo needs it)
    sys.platform = "darwin"
    builtins.open = io.open = _refusing(io.open, "open")
    for name in ("open", "listdir", "scandir", "stat", "lstat", "readlink", "access", "chdir"):
        real = getattr(os, name)
        setattr(os, name, _refusing(real, name))
        for supports in (os.supports_dir_fd, os.supports_fd, os.supports_follow_symlinks, os.supports_effective_ids):
            if real in supports:  # shutil.rmtree asks these to choose its safe, descriptor-based walk
                supports.add(getattr(os, name))
    for name in ("pidfd_open", "unshare", "setns", "sched_getaffinity", "sched_setaffinity"):
        if hasattr(os, name):
            delattr(os, name)

    fork_log = os.environ.get("SIMULATED_FORK_LOG")
    if fork_log:  # every os.fork a simulated process makes, and how many threads it had then
        import threading

        real_fork = os.fork

        def fork() -> int:
            with open(fork_log, "a") as fh:
                fh.write(f"{os.getpid()} {' '.join(sys.argv[:3])} threads={threading.active_count()}\n")
            return real_fork()

        os.fork = fork

    import ctypes

    missing = {"unshare", "setns", "prctl", "seccomp", "pidfd_open"}
    real_getitem = ctypes.CDLL.__getitem__

    def getitem(self, name):  # what CDLL.__getattr__ calls too
        if name in missing:
            raise AttributeError(f"dlsym(RTLD_DEFAULT, {name}): symbol not found (simulated macOS)")
        return real_getitem(self, name)

    ctypes.CDLL.__getitem__ = getitem  # type: ignore[method-assign]


def _simulate_windows() -> None:
    import importlib.abc

    class NoFcntl(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "fcntl":
                raise ModuleNotFoundError("No module named 'fcntl'", name="fcntl")
            return None

    sys.modules.pop("fcntl", None)
    sys.meta_path.insert(0, NoFcntl())


if _PLATFORM == "macos":
    _simulate_macos()
elif _PLATFORM == "windows":
    _simulate_windows()
