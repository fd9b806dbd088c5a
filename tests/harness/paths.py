"""Where the suite's own files are: the checkout, tests/ and the stub programs and assets under it.

Tests name these instead of a path relative to their own file, so a test
module can move between the folders of tests/ without its files moving too.
"""

from __future__ import annotations

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent  # tests/
REPO = TESTS.parent  # the checkout
ASSETS = TESTS / "assets"  # one file per parser case (tests/assets/<format>/...)
SCORERS = TESTS / "scorers"  # tiny scorer programs: pass, fail, crash, hang, ...
STUBS = TESTS / "stubs"  # tiny programs for the process and service tests
PRODUCERS = TESTS / "producers"  # real test runners' sample suites (pytest, node --test, prove)
FORKS = REPO / "evals" / "lib"  # the fork server (evalrun_forks.py), shared with the own evals

# PYTHONPATH for a child Python that imports the harness (pytest puts both on its own sys.path).
HARNESS_PYTHONPATH = os.pathsep.join([str(TESTS), str(FORKS)])
