"""The results file is written piece by piece (never whole in memory) and reads back as the same record."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from evalrun.results import (
    BaselineComparison, CheckResult, EvalResult, NetworkIsolation, RunResults, Status, load_results, write_results,
)

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
    exclude = (set() if run_id else {"run_id"}) | ({"kind"} if kind == "run" else set()) | ({"network"} if network is None else set())
    expected = json.loads(TypeAdapter(RunResults).dump_json(results, exclude=exclude))  # the records' schema's own writer
    assert json.loads(path.read_text(encoding="utf-8")) == expected
    assert load_results(path) == results


# ---------------------------------------------------------------- read for a comparison: checks as counts

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
            assert replace(slim, checks=full.checks) == full
        else:
            assert slim == full  # kept whole: e.g. failed before its scorer, whose empty checks matter
    assert replace(read, evals=results.evals) == results


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


# ---------------------------------------------------------------- written without the records' validators

from evalrun.results import (  # noqa: E402
    BaselineChange, CheckRate, JudgeCalibration, RepeatRun, RepeatSummary, SkippedTest, results_json_pieces,
)

# Ints where floats go (pydantic made them floats, and the file has always said 1.0), NaN and infinities (null).
numbers = st.integers(-10**6, 10**6) | st.floats(allow_nan=True, allow_infinity=True)
any_text = st.text(max_size=12)  # non-ASCII, control characters, quotes; no lone surrogate (no file holds one)
rates = st.builds(CheckRate, runs=st.integers(0, 50), passes=st.integers(0, 50), seen=st.integers(0, 50),
                  pass_at_k=st.dictionaries(st.sampled_from(["1", "3", "5"]), numbers, max_size=2),
                  pass_hat_k=st.dictionaries(st.sampled_from(["1", "3"]), numbers, max_size=2),
                  wilson_95=st.tuples(numbers, numbers), flaky=st.booleans(), failed_runs=st.lists(st.integers(0, 9)))
rated_checks = st.builds(CheckResult, name=any_text, assertions=st.integers(0, 10**9), passed=st.booleans(),
                         message=st.none() | any_text, evidence=st.none() | any_text, rate=st.none() | rates,
                         judge=st.none() | any_text)
repeat_runs = st.builds(RepeatRun, repeat=st.integers(0, 9), status=st.sampled_from([*Status, "passed"]),
                        duration_s=numbers, exit_code=st.none() | st.integers(-9, 255), message=st.none() | any_text)
summaries = st.builds(RepeatSummary, planned=st.integers(1, 9), runs=st.integers(0, 9), floor=numbers, alpha=numbers,
                      stop=st.none() | st.just("decided"), flaky=st.lists(any_text, max_size=2),
                      runs_detail=st.lists(repeat_runs, max_size=2))
metric_values = st.recursive(st.none() | st.booleans() | numbers | any_text,
                             lambda kids: st.lists(kids, max_size=2) | st.dictionaries(any_text, kids, max_size=2),
                             max_leaves=4)
full_evals = st.builds(
    EvalResult, name=any_text, tier=st.just("t3"), dir=any_text, status=st.sampled_from([*Status, "failed"]),
    experiment=st.none() | any_text, message=st.none() | any_text, checks=st.lists(rated_checks, max_size=3),
    metrics=st.dictionaries(any_text, metric_values, max_size=3), duration_s=numbers,
    exit_code=st.none() | st.integers(-9, 255), output_tail=any_text,
    models=st.none() | st.dictionaries(any_text, metric_values, max_size=2), partial=st.booleans(),
    repeats=st.none() | summaries, skipped_tests=st.lists(st.builds(SkippedTest, name=any_text, reason=any_text), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(full_evals)
def test_an_eval_is_written_byte_for_byte_as_its_schema_writes_it(result) -> None:
    # The file's evals are written schema-free (pydantic_core infers from the dataclasses); pydantic's writer driven
    # by the records' schema (what the models wrote with, before they were dataclasses) makes the same bytes.
    results = RunResults(evalrun_version="t", tier="t3", manifest="m.toml", started_at="now", evals=[result])
    written = "".join(results_json_pieces(results))
    by_schema = TypeAdapter(EvalResult).dump_json(result, indent=2).decode().replace("\n", "\n    ")
    assert written.endswith(f'  "evals": [\n    {by_schema}\n  ]\n}}\n')
    head = TypeAdapter(RunResults).dump_json(results, exclude={"evals", "run_id", "kind", "network"}, indent=2).decode()
    assert json.loads(written[: written.index('  "evals": [')] + '"evals": []}') == {**json.loads(head), "evals": []}


def test_a_whole_number_given_where_a_float_goes_is_written_as_a_float(tmp_path: Path) -> None:
    rate = CheckRate(runs=2, passes=2, seen=2, pass_at_k={"1": 1}, wilson_95=(0, 1))
    result = EvalResult(name="e", tier="t3", dir="e", status="passed", duration_s=3,
                        checks=[CheckResult("c", 1, True, rate=rate)],
                        repeats=RepeatSummary(planned=2, runs=2, floor=1, alpha=0, runs_detail=[
                            RepeatRun(repeat=0, status="passed", duration_s=2)]))
    judge = JudgeCalibration(eval="a", anchors=2, both_pass=1, only_people=0, only_judge=0, both_fail=1, kappa=1,
                             corrected=(1, 0, 1))
    change = BaselineChange(eval="e", kind="decayed", message="m", baseline_rate=[2, 2], p_value=0, detectable=1)
    results = RunResults(evalrun_version="t", tier="t3", manifest="m.toml", started_at="now", evals=[result],
                         judges=[judge], baseline=BaselineComparison(path="b", exists=True, regressions=[change]))
    assert result.status is Status.PASSED and result.repeats.runs_detail[0].status is Status.PASSED
    path = tmp_path / "t3.json"
    write_results(results, path)
    doc = json.loads(path.read_text(encoding="utf-8"))  # 3.0 reads as a float, 3 as an int
    e, j, c = doc["evals"][0], doc["judges"][0], doc["baseline"]["regressions"][0]
    rate, repeats = e["checks"][0]["rate"], e["repeats"]
    floats = [e["duration_s"], repeats["floor"], repeats["alpha"], repeats["runs_detail"][0]["duration_s"],
              rate["pass_at_k"]["1"], *rate["wilson_95"], j["kappa"], *j["corrected"], c["p_value"], c["detectable"]]
    assert [type(x) for x in floats] == [float] * 13 and floats == [3, 1, 0, 2, 1, 0, 1, 1, 1, 0, 1, 0, 1]
    assert c["baseline_rate"] == [2, 2] and type(results.baseline.regressions[0].baseline_rate) is tuple
    assert load_results(path) == results


def test_a_key_with_a_lone_surrogate_is_written_as_the_models_wrote_it(tmp_path: Path) -> None:
    # A model's or a metric's name with half a surrogate pair: each of its three UTF-8 bytes as U+FFFD, as pydantic's
    # models wrote such a key; the file is written, not lost.
    result = EvalResult(name="e", tier="t1", dir="e", status=Status.PASSED, metrics={"a\udfffb": 1},
                        models={"m\ud800": {"calls": 1}})
    results = RunResults(evalrun_version="t", tier="t1", manifest="m.toml", started_at="now", evals=[result],
                         selection={"evals\udc80": []})
    path = tmp_path / "t1.json"
    write_results(results, path)
    read = load_results(path)
    assert read.selection == {"evals\ufffd\ufffd\ufffd": []}
    assert read.evals[0].metrics == {"a\ufffd\ufffd\ufffdb": 1} and read.evals[0].models == {"m\ufffd\ufffd\ufffd": {"calls": 1}}


@pytest.mark.parametrize(("change", "where", "words"), [
    (lambda doc: doc.update(extra=1), "extra", "Extra inputs are not permitted"),
    (lambda doc: doc["evals"][0].update(extra=1), "evals.0.extra", "Extra inputs are not permitted"),
    (lambda doc: doc["evals"].append(3), "evals.1", "Input should be a valid dictionary or instance of EvalResult"),
    (lambda doc: doc.update(network=[]), "network", "Input should be a valid dictionary or instance of NetworkIsolation"),
    # A check was a pydantic dataclass: its words were pydantic's words for a dataclass.
    (lambda doc: doc["evals"][0]["checks"][0].update(extra=1), "evals.0.checks.0.extra", "Unexpected keyword argument"),
    (lambda doc: doc["evals"][0]["checks"].append(3), "evals.0.checks.1",
     "Input should be a dictionary or an instance of CheckResult"),
    (lambda doc: doc.update(run_id="a b"), "run_id", "String should match pattern '^[0-9A-Za-z][0-9A-Za-z._-]{0,99}$'"),
    (lambda doc: doc.update(network={"isolated": False, "reason": "x" * 2001}), "network.reason",
     "String should have at most 2000 characters"),
])
def test_a_bad_results_file_is_named_in_the_words_it_always_was(tmp_path: Path, change, where, words) -> None:
    doc = {"version": 4, "evalrun_version": "t", "tier": "t1", "manifest": "m.toml", "started_at": "now",
           "evals": [{"name": "a", "tier": "t1", "dir": "a", "status": "passed", "exit_code": 0,
                      "checks": [{"name": "c", "assertions": 1, "passed": True}]}]}
    change(doc)
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ResultsError) as exc:
        load_results(path)
    assert str(exc.value) == f"{path}: {where}: {words}; rerun the tier to rewrite it"


def test_the_records_compare_and_print_as_dataclasses_do() -> None:
    # Their __eq__ and __repr__ are written once (evalrun.results._Record), not generated per class.
    nan = float("nan")
    one = EvalResult(name="a", tier="t1", dir="d", status=Status.PASSED, duration_s=nan)
    assert one == replace(one) and one == EvalResult(name="a", tier="t1", dir="d", status="passed", duration_s=nan)
    assert one != replace(one, message="m") and one != replace(one, duration_s=0.0) and one != "a"
    assert SkippedTest(name="a") != RepeatRun(repeat=0, status=Status.PASSED)  # another record: never equal
    assert repr(SkippedTest(name="a", reason="b'")) == "SkippedTest(name='a', reason=\"b'\")"
    assert repr(one).startswith("EvalResult(name='a', tier='t1', dir='d', status=<Status.PASSED: 'passed'>, experiment=None")
    with pytest.raises(TypeError):
        hash(one)  # mutable, so unhashable, as the models were; a check is frozen and hashable
    assert hash(CheckResult("c", 1, True)) == hash(CheckResult("c", 1, True))
