"""The results file is written piece by piece (never whole in memory) and reads back as the same record."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.results import CheckResult, EvalResult, RunResults, Status, load_results, write_results

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
checks = st.builds(CheckResult, name=text, assertions=st.integers(0, 10**9), passed=st.booleans(),
                   message=st.none() | text, evidence=st.none() | text)
evals = st.builds(EvalResult, name=text, tier=st.just("t1"), dir=text, status=st.sampled_from(list(Status)),
                  checks=st.lists(checks, max_size=3), metrics=st.dictionaries(text, st.integers() | text, max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.lists(evals, max_size=4), st.none() | st.integers(0, 130))
def test_the_file_written_in_pieces_is_the_record_as_json(tmp_path_factory, found, code) -> None:
    results = RunResults(evalrun_version="t", tier="t1", manifest="m.toml", started_at="now", evals=found, exit_code=code)
    path = Path(tmp_path_factory.mktemp("r")) / "t1.json"
    write_results(results, path)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(results.model_dump_json())
    assert load_results(path) == results
