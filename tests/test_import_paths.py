"""The manifest and baseline packages' faces (``__init__``) expose the names the rest of evalrun imports from them."""

from __future__ import annotations

import importlib

import pytest

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


@pytest.mark.parametrize(("face", "names"), FACES.items())
def test_a_package_face_exposes_the_names_imported_before_the_split(face: str, names: list[str]) -> None:
    module = importlib.import_module(face)
    assert [name for name in names if not hasattr(module, name)] == []
