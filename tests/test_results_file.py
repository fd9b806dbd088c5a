"""The results file is written piece by piece (never whole in memory) and reads back as the same record."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.results import CheckResult, EvalResult, NetworkIsolation, RunResults, Status, load_results, write_results

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
checks = st.builds(CheckResult, name=text, assertions=st.integers(0, 10**9), passed=st.booleans(),
                   message=st.none() | text, evidence=st.none() | text)
evals = st.builds(EvalResult, name=text, tier=st.just("t1"), dir=text, status=st.sampled_from(list(Status)),
                  checks=st.lists(checks, max_size=3), metrics=st.dictionaries(text, st.integers() | text, max_size=2))


networks = st.none() | st.builds(NetworkIsolation, isolated=st.booleans(),
                                 mechanism=st.none() | st.sampled_from(["namespace", "seccomp+landlock", "seccomp"]),
                                 reason=st.none() | text)


@settings(max_examples=150, deadline=None)
@given(st.lists(evals, max_size=4), st.none() | st.integers(0, 130), st.none() | st.just("20261201T000000-t1-0a1b2c3d"),
       st.sampled_from(["run", "bites"]), networks)
def test_the_file_written_in_pieces_is_the_record_as_json(tmp_path_factory, found, code, run_id, kind, network) -> None:
    results = RunResults(evalrun_version="t", tier="t1", manifest="m.toml", started_at="now", evals=found, exit_code=code,
                         run_id=run_id, kind=kind, network=network)
    path = Path(tmp_path_factory.mktemp("r")) / "t1.json"
    write_results(results, path)
    # Without a run id (a file of an older evalrun, written again) the file has no "run_id" key, as that evalrun wrote it;
    # a run's file has no "kind" (only bites say theirs), and one without a network (t3, an older evalrun's) no
    # "network", for the same reason.
    expected = json.loads(results.model_dump_json(exclude=(set() if run_id else {"run_id"}) | ({"kind"} if kind == "run" else set())
                                                  | ({"network"} if network is None else set())))
    assert json.loads(path.read_text(encoding="utf-8")) == expected
    assert load_results(path) == results


# ---------------------------------------------------------------- read for a comparison: checks as counts

from pydantic import TypeAdapter  # noqa: E402

from evalrun.errors import ResultsError  # noqa: E402
from evalrun.results import _CountedCheck, load_results_counted  # noqa: E402


def test_the_counted_check_validates_exactly_as_the_check_record() -> None:
    # The counted reader validates checks as dicts; drift from CheckResult would accept other files.
    def shape(schema: dict) -> dict:  # what is accepted: no titles, descriptions or output defaults
        for field in schema["properties"].values():
            field.pop("default", None)
        return {key: value for key, value in schema.items() if key not in ("title", "description")}

    assert shape(TypeAdapter(_CountedCheck).json_schema()) == shape(TypeAdapter(CheckResult).json_schema())


@settings(max_examples=150, deadline=None)
@given(st.lists(evals, max_size=4, unique_by=lambda e: e.name), st.none() | st.integers(0, 130))
def test_a_file_read_as_counts_is_the_same_run(tmp_path_factory, found, code) -> None:
    results = RunResults(evalrun_version="t", tier="t1", manifest="m.toml", started_at="now", evals=found, exit_code=code)
    path = Path(tmp_path_factory.mktemp("r")) / "t1.json"
    write_results(results, path)
    read, counts = load_results_counted(path)
    for full, slim in zip(results.evals, read.evals):
        if full.name in counts:
            assert slim.checks == [] and counts[full.name] == full.check_counts()
            assert slim.model_copy(update={"checks": full.checks}) == full
        else:
            assert slim == full  # kept whole: e.g. failed before its scorer, whose empty checks matter
    assert read.model_copy(update={"evals": results.evals}) == results


bad_checks = st.sampled_from([
    {"name": "x", "assertions": "many", "passed": True},
    {"name": "x", "assertions": 1, "passed": True, "extra": 1},
    {"name": "x", "passed": True},
    {"name": 3, "assertions": 1, "passed": True},
    "not a check",
    None,
])


@settings(max_examples=60, deadline=None)
@given(bad_checks, st.integers(0, 2))
def test_a_bad_check_is_the_same_one_line_error_either_way(tmp_path_factory, bad, where) -> None:
    good = {"name": "ok", "assertions": 1, "passed": True}
    checks = [good, good, good]
    checks[where] = bad
    doc = {"version": 2, "evalrun_version": "t", "tier": "t1", "manifest": "m.toml", "started_at": "now",
           "evals": [{"name": "a", "tier": "t1", "dir": "a", "status": "passed", "exit_code": 0, "checks": checks}]}
    path = Path(tmp_path_factory.mktemp("r")) / "t1.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    try:
        load_results(path)
    except ResultsError as exc:
        expected = str(exc)
    else:
        raise AssertionError("load_results accepted a bad check")
    try:
        load_results_counted(path)
    except ResultsError as exc:
        assert str(exc) == expected
    else:
        raise AssertionError("load_results_counted accepted a bad check")


def test_an_eval_name_twice_is_read_as_records(tmp_path: Path) -> None:
    doc = {"version": 2, "evalrun_version": "t", "tier": "t1", "manifest": "m.toml", "started_at": "now",
           "evals": [{"name": "a", "tier": "t1", "dir": "a", "status": "passed", "exit_code": 0,
                      "checks": [{"name": f"c{i}", "assertions": i + 1, "passed": True}]} for i in range(2)]}
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    read, counts = load_results_counted(path)
    assert counts == {} and read == load_results(path)
