"""``evalrun dry``'s listing is worded in ``reports_out/dry.py``: the lines no CLI test pins, pinned in process."""

from __future__ import annotations

import io
from pathlib import Path

from evalrun.manifest.schema import EvalSpec
from evalrun.models.fixture_state import FixtureState
from evalrun.plan import Plan, PlannedEval
from evalrun.reports_out.dry import DryEval, DryListing, eval_lines, model_lines, nothing_selected, print_dry
from evalrun.reports_out.terminal import Console


def _Fixtures(**fields: object) -> FixtureState:  # noqa: N802 - a record with the listing's defaults
    return FixtureState(**{"mode": "replay", "folder": Path("evals/a/fixtures"), "session": "a", "owner": "a",
                           "recorded": 0, "named": (), "elsewhere": (), "unplayed": None,
                           "upstreams": {}, "recorders": (), **fields})


def _planned(**fields: object) -> PlannedEval:
    spec = EvalSpec(**{"name": "a", "tier": "t1", "dir": "evals/a", "run": ["python", "score.py"], **fields})
    return PlannedEval(spec=spec, dir=Path("/p/evals/a"))


def test_the_header_and_an_evals_settings_read_as_listed() -> None:
    planned = _planned(run=["make check"], shell=True, requires=["env:X"], services=["db"], tags=["fast"])
    out = io.StringIO()
    print_dry(DryListing("t1", Plan([planned], ["b", "c"], {}, {}, {}), [DryEval(planned, "run")]), Console(out, env={}))
    assert out.getvalue().splitlines() == [
        "planned in t1: 1 eval (nothing is run)",
        "a: would run",
        "  tier t1, dir evals/a, timeout 300 s, tags fast",
        "  run: make check  (shell)",
        "  requires: env:X",
        "  services: db",
        "filtered out: b, c",
    ]


def test_all_tiers_and_nothing_selected_name_the_scope_and_the_filters() -> None:
    assert nothing_selected(None, Plan([], [], {}, {}, {})) == "nothing selected to run in all tiers (the tier has no evals in the manifest)"
    assert nothing_selected("t2", Plan([], [], {"tags": ["x"]}, {}, {})) == "nothing selected to run in t2 (filters: --tag x)"


def test_replay_without_recordings_would_fail_and_says_who_records_them() -> None:
    lines = eval_lines(DryEval(_planned(), "run", fixtures=_Fixtures()))
    assert lines[0] == "a: would run, and FAIL: its model calls have no recordings in evals/a/fixtures/a/"
    assert lines[-1] == ('  model: replay from evals/a/fixtures/a/: missing: nothing recorded in evals/a/fixtures/; '
                         'no t3 eval records them: give one fixtures_for = "a"')


def test_named_sessions_and_recordings_without_an_experiment_are_listed() -> None:
    state = _Fixtures(recorded=2, named=(("greet", 1),), elsewhere=(("fixtures", 3),))
    assert model_lines(state, "a") == [
        "model: replay from evals/a/fixtures/a/: 2 recorded calls",
        "  sessions its calls may name (X-Evalrun-Session), in evals/a/fixtures/: greet (1)",
        "  recorded without an experiment: fixtures/a/ (3 recorded calls)",
    ]
