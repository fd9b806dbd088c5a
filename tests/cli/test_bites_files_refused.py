"""A bites results file is not a run's results: baseline --from-results and history import refuse it in one line."""

from __future__ import annotations

import json

import pytest

from harness import eval_entry, json_scorer


@pytest.fixture
def bites_file(project):
    """A project that ran t1 once, and its results file as ``evalrun bites`` marks its own (``kind``)."""
    proj = project({"manifest.toml": eval_entry("guard"),
                    "evals/guard/score.py": json_scorer([{"name": "holds", "assertions": 1, "passed": True}])})
    assert proj.run("t1").code == 0
    data = json.loads((proj.root / ".evalrun/results/t1.json").read_text())
    path = proj.root / "bites-t1.json"
    path.write_text(json.dumps({**data, "kind": "bites"}))
    return proj, path


def test_a_bites_file_is_no_baseline_and_no_history_run_but_the_run_it_was_made_from_is(bites_file):
    proj, path = bites_file
    before = (proj.root / "baselines" / "t1.toml").read_bytes() if (proj.root / "baselines" / "t1.toml").exists() else None
    refused = proj.run("baseline", "--update", "t1", "--from-results", str(path))
    assert refused.code == 2, refused.output
    lines = refused.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        "bites-t1.json: holds bites (evalrun bites), not a run's results; pass the results of a run "
        "(.evalrun/results/t1.json)"), refused.err
    after = (proj.root / "baselines" / "t1.toml").read_bytes() if (proj.root / "baselines" / "t1.toml").exists() else None
    assert after == before  # nothing written
    imported = proj.run("history", "import", str(path))
    assert imported.code == 2, imported.output
    assert imported.err.strip().endswith("bites-t1.json: holds bites (evalrun bites), not a run's results; "
                                         "bites runs are not kept in the history; import the results of runs")
    # The same file as the run wrote it is taken by both.
    run_file = str(proj.root / ".evalrun/results/t1.json")
    assert proj.run("baseline", "--update", "t1", "--from-results", run_file).code == 0
    assert proj.run("history", "import", run_file).code == 0
