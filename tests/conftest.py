"""The suite's fixtures and hooks come from the ``harness`` package (tests/harness/).

``harness.plugin`` is loaded as a pytest plugin, as tox's tests load
``tox.pytest``; test modules import helpers from ``harness``. The package is
importable through pyproject.toml's ``[tool.pytest.ini_options] pythonpath``.
"""

import pytest

pytest.register_assert_rewrite("harness")  # its helpers assert, and a failing one should say what it saw

pytest_plugins = ["harness.plugin"]
