"""The import paths code was written against before baseline and manifest became packages still work.

Branches written against the old paths merge while the packages settle: the old
modules ``evalrun.baseline_rates``, ``_judges`` and ``_settings`` are the new
modules themselves (monkeypatching either reaches the same code), and each
package's face exposes the names imported from it before the split.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

OLD_TO_NEW = {
    "evalrun.baseline_rates": "evalrun.baseline.rates",
    "evalrun.baseline_judges": "evalrun.baseline.judges",
    "evalrun.baseline_settings": "evalrun.baseline.settings",
}

# Every name imported from the two modules before the split (by evalrun, tests and bench).
FACES = {
    "evalrun.manifest": [
        "Bite", "Budget", "EXPERIMENT_NAME", "EvalSpec", "Experiment", "MANIFEST_LIMIT", "Manifest", "Price", "TIERS",
        "_RawManifest", "load_manifest", "manifest_schema", "upstream_problem",
    ],
    "evalrun.baseline": [
        "Baseline", "_read_whole_written_form", "_read_written_form", "baseline_fingerprint", "baseline_lock",
        "baseline_path", "check_unchanged_since", "compare_tier", "compare_to_baseline", "load_baseline", "mark_written",
        "update_baseline", "update_command", "write_baseline",
    ],
}


@pytest.mark.parametrize(("old", "new"), OLD_TO_NEW.items())
def test_an_old_module_path_is_the_new_module(old: str, new: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(new)


@pytest.mark.parametrize("old", OLD_TO_NEW)
def test_an_old_module_path_imports_first_in_a_fresh_interpreter(old: str) -> None:
    # Imported before anything else of evalrun, the old path must not meet a half-initialised package.
    code = f"import {old} as m; from {old} import *; print(m.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == OLD_TO_NEW[old]


@pytest.mark.parametrize(("face", "names"), FACES.items())
def test_a_package_face_exposes_the_names_imported_before_the_split(face: str, names: list[str]) -> None:
    module = importlib.import_module(face)
    assert [name for name in names if not hasattr(module, name)] == []
