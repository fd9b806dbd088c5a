"""How the project installs: an editable install costs a Python process of the venv nothing at startup.

Every scorer a run starts with ``python`` is a fresh interpreter of this venv,
and the suite starts thousands. With the package's folder said outright in
pyproject.toml (``[tool.setuptools] package-dir = {"" = "."}``), ``pip install
-e .`` writes one static ``.pth`` line naming the checkout; without it
setuptools installs an import hook (``__editable___*_finder``) that every
interpreter imports at startup, with pathlib, re and enum: about 13 ms of CPU
each, three times what the interpreter costs otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

from harness import REPO

STARTUP = "import json, sys; print(json.dumps(sorted(sys.modules)))"


def test_a_python_of_this_venv_starts_without_an_import_hook_for_evalrun():
    started = json.loads(subprocess.run([sys.executable, "-c", STARTUP], capture_output=True, text=True,
                                        check=True).stdout)
    hooks = [name for name in started if name.startswith("__editable__")]
    assert hooks == [], f"an editable install's import hook runs in every interpreter: {hooks}; see pyproject.toml; reinstall: pip install -e .[dev]"
    assert "pathlib" not in started  # what the hook imported: nothing at startup needs it


def test_the_package_folder_is_said_so_an_editable_install_is_a_static_path():
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "."}
    assert setuptools["packages"]["find"]["include"] == ["evalrun*"]  # the wheel still holds evalrun only
