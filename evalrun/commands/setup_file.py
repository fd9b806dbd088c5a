"""``evalrun setup-file vitest|jest``: print the path of evalrun's setup file for that test runner.

The setup files ship inside the package (``evalrun/reports_in/js/``, package
data): each records every test's assertion count where evalrun's JUnit reader
finds it (``evalrun.reports_in.assertion_counts``). Projects copy the file in
(``cp "$(evalrun setup-file vitest)" evalrun.setup.mjs``) so their test config
names a path that exists on every machine.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evalrun.errors import UsageError

SETUP_DIR = Path(__file__).resolve().parent.parent / "reports_in" / "js"
SETUP_FILES = {"vitest": "vitest.setup.mjs", "jest": "jest.setup.cjs"}


def setup_file_path(runner: str) -> Path:
    if runner not in SETUP_FILES:
        raise UsageError(f"no setup file for {runner!r}; use one of {', '.join(SETUP_FILES)}")
    return SETUP_DIR / SETUP_FILES[runner]


def setup_file(runner: str) -> int:
    sys.stdout.write(f"{setup_file_path(runner)}\n")
    return 0
