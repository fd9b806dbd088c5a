"""``evalrun setup-file vitest|jest``: print the path of evalrun's setup file for that test runner.

The setup files ship inside the package (``evalrun/reports_in/js/``, package
data): each records every test's assertion count where evalrun's JUnit reader
finds it (``evalrun.reports_in.assertion_counts``). Projects copy the file in
(``cp "$(evalrun setup-file vitest)" evalrun.setup.mjs``) so their test config
names a path that exists on every machine.
"""

from __future__ import annotations

import sys

from evalrun.reports_in.assertion_counts import setup_file_path


def setup_file(runner: str) -> int:
    sys.stdout.write(f"{setup_file_path(runner)}\n")
    return 0
