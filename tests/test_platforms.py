"""Where evalrun runs: Linux and macOS fully; Windows refused at start with one line; Python's floor.

macOS and Windows are simulated on this Linux machine by ``harness.simulation``
(a ``sitecustomize`` every process evalrun starts inherits).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib

from harness import REPO, an_eval, manifest
from harness.simulation import simulated_env
from packaging.specifiers import SpecifierSet

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_simulation_is_what_each_platform_looks_like(tmp_path) -> None:
    probe = ("import sys, os, ctypes\n"
             "try:\n    import fcntl; has_fcntl = True\nexcept ImportError:\n    has_fcntl = False\n"
             "try:\n    open('/proc/self/stat'); proc = True\nexcept FileNotFoundError:\n    proc = False\n"
             "print(sys.platform, has_fcntl, proc, hasattr(os, 'pidfd_open'), hasattr(ctypes.CDLL(None), 'unshare'),"
             " hasattr(ctypes.CDLL(None), 'prctl'))\n")
    said = {p: subprocess.run([sys.executable, "-c", probe], env=simulated_env(p, {}), capture_output=True,
                              text=True, check=True).stdout.split() for p in ("macos", "windows")}
    assert said["macos"] == ["darwin", "True", "False", "False", "False", "False"]
    assert said["windows"][1] == "False"


def test_windows_is_refused_at_start_with_one_line_and_exit_2(tmp_path) -> None:
    (tmp_path / "manifest.toml").write_text(manifest(an_eval("a", ["true"], dir=".")).text)
    for args in (["t1"], ["check"], ["history"]):
        proc = subprocess.run([sys.executable, "-m", "evalrun", *args], cwd=tmp_path, capture_output=True,
                              text=True, env=simulated_env("windows", {}), timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert proc.stderr.splitlines() == [
            "evalrun: error: this platform (linux) is not supported: evalrun needs POSIX file locks and process "
            "groups (no fcntl module here); run it on Linux or macOS (on Windows: in WSL 2)"
        ]
    assert not (tmp_path / ".evalrun").exists()  # nothing was started, nothing written


def test_the_python_floor_is_3_11_with_or_without_tarfiles_filters() -> None:
    # Debian 12's python3 is 3.11.2, without tarfile's extraction filters (3.11.4): --clean-checkout checks
    # git archive's members itself there (tests/selection/test_checkout.py runs both ways).
    floor = SpecifierSet(PYPROJECT["requires-python"])
    assert "3.10.14" not in floor and "3.11.0" in floor and "3.11.2" in floor and "3.12.0" in floor


def test_the_supported_platforms_are_stated() -> None:
    classifiers = PYPROJECT["classifiers"]
    assert {"Operating System :: POSIX :: Linux", "Operating System :: MacOS"} <= set(classifiers)
    assert not [c for c in classifiers if "Windows" in c]
    readme = (REPO / "README.md").read_text()
    assert "Linux and macOS" in readme and "Windows" in readme
