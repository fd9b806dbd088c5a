"""``tier_cells`` names the planned runs without resolving folders: held equal to ``cells`` itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrun.manifest import load_manifest
from evalrun.plan import cells, tier_cells

from harness import eval_entry

MANIFEST = """\
[experiments.mini]
env = { MODEL = "mini" }
skip = { tags = ["big"], reason = "too big for mini" }

[experiments.large]
env = { MODEL = "large" }
evals = ["agent", "t1-only"]

""" + "".join([
    eval_entry("agent", extra='tags = ["big"]\nexperiments = ["mini", "large"]'),
    eval_entry("t1-only", extra='experiments = ["mini"]'),
    eval_entry("plain"),
    eval_entry("live", tier="t3", extra='experiments = ["mini", "large"]'),
])


@pytest.mark.parametrize("tier", ["t1", "t2", "t3", None])
def test_tier_cells_names_what_cells_plans(tmp_path: Path, tier: str | None) -> None:
    (tmp_path / "manifest.toml").write_text(MANIFEST)
    for name in ("agent", "t1-only", "plain", "live"):
        (tmp_path / "evals" / name).mkdir(parents=True)
    manifest = load_manifest(tmp_path / "manifest.toml")
    expected = [
        planned.name
        for spec in manifest.evals
        if tier is None or spec.tier == tier
        for planned, skip in cells(manifest, spec)
        if skip is None
    ]
    assert tier_cells(manifest, tier) == expected
    if tier == "t1":
        assert expected == ["agent[large]", "t1-only[mini]", "plain[mini]"]  # agent[mini] is left out by its skip rule
