"""The Inspect AI and promptfoo readers, without the tools: logs the real tools wrote, then edge cases and fuzzing.

``assets/eval_tools`` holds a ``.eval`` log written by Inspect AI 0.3 (mockllm/model,
``fail_on_error=False``, sample ``b`` errored; its members zstandard-compressed)
and a ``promptfoo eval -o`` output of promptfoo 0.121 (two passes, a failed
assertion, a provider that threw). The runs through the real tools are in
``test_eval_tools_real``. Any input gives checks or one line: Hypothesis holds
both readers to it.
"""

from __future__ import annotations

import io
import json
import sys
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalrun.errors import ReportError
from evalrun.reports_in import inspect_log
from evalrun.reports_in.inspect_log import VALUE_LIMIT, json_values, parse_inspect
from evalrun.reports_in.promptfoo import parse_promptfoo
from evalrun.reports_in.rules import judge
from evalrun.results import Status

from harness import TESTS, an_eval, manifest

ASSETS = TESTS / "assets" / "eval_tools"


def header(task: str = "quiz", status: str = "success", model: str = "mockllm/model", **extra: Any) -> dict[str, Any]:
    return {
        "version": 2, "status": status,
        "eval": {"task": task, "model": model, "config": {"epochs": 1},
                 "scorers": [{"name": "includes"}, {"name": "match"}]},
        "results": {"scores": [{"name": "includes", "metrics": {"accuracy": {"name": "accuracy", "value": 0.5},
                                                                 "stderr": {"name": "stderr", "value": float("nan")}}}]},
        **extra,
    }


def sample(sample_id: Any, epoch: int = 1, error: str | None = None, **scores: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": sample_id, "epoch": epoch,
                           "scores": {k: {"value": v, "explanation": f"saw {v}"} for k, v in scores.items()}}
    if error is not None:
        out["error"] = {"message": error, "traceback": f"Traceback...\n{error}\n"}
    return out


def json_log(folder: Path, name: str, head: dict[str, Any], samples: list[Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({**head, "samples": samples}))
    return path


def eval_log(folder: Path, name: str, members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    with zipfile.ZipFile(path, "w", compression) as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    return path


def names(report) -> list[str]:
    return [c.name for c in report.checks]


# --- Inspect AI -----------------------------------------------------------------------------------------------


def test_a_real_inspect_eval_log_zstd_members_errored_sample_fails_with_its_error(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "2026-12-01T21-46-24_quiz_x.eval").write_bytes((ASSETS / "inspect-sample-error.eval").read_bytes())
    report = parse_inspect(logs, "$INSPECT_LOG_DIR")
    assert names(report) == [f"quiz > {s} > {k}" for s in "abc" for k in ("includes", "match")]
    failed = {c.name: c.message for c in report.checks if not c.passed}
    assert set(failed) == {"quiz > b > includes", "quiz > b > match"}
    assert failed["quiz > b > match"] == "sample errored: RuntimeError('the tool broke on sample b')"
    assert report.problem is None  # Inspect says success; the errored sample fails it here
    assert report.metrics["quiz/includes/accuracy"] == 1.0
    assert judge(report, None, 0, "").status is Status.FAILED


@pytest.mark.parametrize(
    ("value", "passed"),
    [("C", True), ("I", False), ("P", False), ("N", False), (True, True), (False, False), (1, True), (1.0, True),
     (0.7, False), ("yes", True), ("true", True), ("1.0", True), ("no", False), (None, False), ("nan", False)],
)
def test_a_score_passes_when_inspects_value_to_float_reads_it_as_one(tmp_path: Path, value: Any, passed: bool) -> None:
    json_log(tmp_path / "logs", "a.json", header(), [sample("q1", match=value)])
    (check,) = parse_inspect(tmp_path / "logs", "logs").checks
    assert (check.name, check.passed, check.assertions) == ("quiz > q1 > match", passed, 1)


def test_a_dict_value_passes_when_each_value_does_and_each_counts(tmp_path: Path) -> None:
    json_log(tmp_path / "logs", "a.json", header(), [sample(7, judge={"tone": "C", "facts": "C"}),
                                                      sample(8, judge={"tone": "C", "facts": "I"})])
    ok, bad = parse_inspect(tmp_path / "logs", "logs").checks
    assert (ok.name, ok.assertions, ok.passed) == ("quiz > 7 > judge", 2, True)
    assert (bad.assertions, bad.passed) == (2, False) and "facts" in (bad.message or "")


def test_epochs_are_one_check_whose_assertions_count_them_and_every_epoch_must_pass(tmp_path: Path) -> None:
    json_log(tmp_path / "logs", "a.json", header(), [sample("q", 1, match="C"), sample("q", 2, match="I"),
                                                      sample("r", 1, match="C"), sample("r", 2, match="C")])
    q, r = parse_inspect(tmp_path / "logs", "logs").checks
    assert (q.name, q.assertions, q.passed) == ("quiz > q > match", 2, False)
    assert (q.message or "").startswith("epoch 2: scored I")
    assert (r.assertions, r.passed) == (2, True)


def test_an_errored_sample_without_scores_fails_under_every_scorer_the_task_has(tmp_path: Path) -> None:
    json_log(tmp_path / "logs", "a.json", header(), [sample("q", error="TimeoutError('model')")])
    report = parse_inspect(tmp_path / "logs", "logs")
    assert names(report) == ["quiz > q > includes", "quiz > q > match"]
    assert all(not c.passed and "TimeoutError('model')" in (c.message or "") for c in report.checks)


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [("error", {"message": "ValueError('bad dataset')"}, "Inspect task quiz ended in error: ValueError('bad dataset')"),
     ("cancelled", None, "Inspect task quiz was cancelled"),
     ("started", None, "did not finish its log")],
)
def test_a_log_that_did_not_succeed_fails_the_eval(tmp_path: Path, status: str, error: Any, says: str) -> None:
    head = header(status=status, **({"error": error} if error else {}))
    json_log(tmp_path / "logs", "a.json", head, [sample("q", match="C")])
    report = parse_inspect(tmp_path / "logs", "logs")
    assert says in (report.problem or "")
    assert judge(report, None, 0, "").status is Status.FAILED


def test_an_unfinished_eval_log_without_its_header_is_read_from_its_journal(tmp_path: Path) -> None:
    start = json.dumps({"version": 2, "eval": header()["eval"]}).encode()
    eval_log(tmp_path / "logs", "a.eval", {"_journal/start.json": start,
                                           "samples/q_epoch_1.json": json.dumps(sample("q", match="C")).encode()})
    report = parse_inspect(tmp_path / "logs", "logs")
    assert names(report) == ["quiz > q > match"]
    assert "did not finish its log" in (report.problem or "")


def test_several_logs_one_task_per_model_names_the_model_and_a_repeat_is_refused(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    json_log(logs, "1.json", header(model="a/one"), [sample("q", match="C")])
    json_log(logs, "2.json", header(model="b/two"), [sample("q", match="C")])
    assert names(parse_inspect(logs, "logs")) == ["quiz (a/one) > q > match", "quiz (b/two) > q > match"]
    json_log(logs, "3.json", header(model="b/two"), [sample("q", match="C")])
    with pytest.raises(ReportError, match=r"task 'quiz \(b/two\)' is also in logs/2.json; run each task once"):
        parse_inspect(logs, "logs")


def test_no_log_says_that_evalrun_sets_the_log_folder(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match=r"Inspect wrote no log there; evalrun sets INSPECT_LOG_DIR .* drop any --log-dir"):
        parse_inspect(tmp_path / "none", "$INSPECT_LOG_DIR")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "logs.json").write_text("{}")  # eval-set's listing is no log
    with pytest.raises(ReportError, match="Inspect wrote no log there"):
        parse_inspect(tmp_path / "logs", "$INSPECT_LOG_DIR")


def test_a_zip_bomb_member_is_refused_at_the_limit(tmp_path: Path) -> None:
    bomb = b'{"id": "q", "pad": "' + b" " * (40 * 1024 * 1024) + b'"}'
    path = eval_log(tmp_path / "logs", "a.eval", {"header.json": json.dumps(header()).encode(),
                                                  "samples/q_epoch_1.json": bomb})
    assert path.stat().st_size < 200_000  # 40 MiB in under 200 KB
    with pytest.raises(ReportError, match=r"samples/q_epoch_1.json: decompresses to more than 32 MiB"):
        parse_inspect(tmp_path / "logs", "logs")


def test_a_stored_eval_log_is_read_too(tmp_path: Path) -> None:
    eval_log(tmp_path / "logs", "a.eval", {"header.json": json.dumps(header()).encode(),
                                           "samples/q_epoch_1.json": json.dumps(sample("q", match="C")).encode()},
             zipfile.ZIP_STORED)
    assert names(parse_inspect(tmp_path / "logs", "logs")) == ["quiz > q > match"]


def test_metrics_carry_over_and_nan_is_left_out(tmp_path: Path) -> None:
    json_log(tmp_path / "logs", "a.json", header(), [sample("q", includes="C")])
    assert parse_inspect(tmp_path / "logs", "logs").metrics == {"quiz/includes/accuracy": 0.5}


def test_secrets_are_scrubbed_from_inspect_names_and_messages(tmp_path: Path) -> None:
    secret = "sk-live-0123456789abcdef"
    json_log(tmp_path / "logs", "a.json", header(), [sample(f"id-{secret}", error=f"auth {secret} refused")])
    report = parse_inspect(tmp_path / "logs", "logs", secrets=[secret])
    assert secret not in repr(report)


# --- promptfoo --------------------------------------------------------------------------------------------------


def promptfoo_row(description: str | None, provider: str = "shout", prompt: str = "say {{word}}",
                  passes: tuple[bool, ...] = (True,), error: str | None = None, **variables: Any) -> dict[str, Any]:
    case: dict[str, Any] = {"vars": variables, "assert": [{"type": "contains", "value": "X"}] * len(passes)}
    if description is not None:
        case["description"] = description
    row: dict[str, Any] = {"testCase": case, "vars": variables, "provider": {"id": provider, "label": provider},
                           "prompt": {"raw": prompt, "label": prompt}}
    if error is not None:
        return {**row, "success": False, "failureReason": 2, "error": error}
    components = [{"pass": p, "score": int(p), "reason": "ok" if p else "Expected X",
                   "assertion": {"type": "contains", "value": "X"}} for p in passes]
    return {**row, "success": all(passes), "failureReason": 0 if all(passes) else 1,
            "gradingResult": {"pass": all(passes), "reason": "", "componentResults": components}}


def promptfoo_out(tmp_path: Path, rows: list[Any], stats: Any = None) -> Path:
    path = tmp_path / "out.json"
    path.write_text(json.dumps({"evalId": "e", "results": {"version": 3, "results": rows, "stats": stats or {}}}))
    return path


def test_a_real_promptfoo_output(tmp_path: Path) -> None:
    report = parse_promptfoo(ASSETS / "promptfoo-out.json", "e/out.json")
    checks = {c.name: (c.assertions, c.passed, c.message) for c in report.checks}
    assert checks == {
        "shouts hello > echo": (2, True, None),
        "word=world > echo": (1, True, None),
        "fails > echo": (1, False, 'contains: Expected output to contain "xyz"'),
        "errors > echo": (1, False, "error: Error: provider exploded on BOOM"),
    }
    errored = next(c for c in report.checks if c.name == "errors > echo")
    assert "at Echo.callApi" in (errored.evidence or "")
    assert report.metrics == {"successes": 2, "failures": 1, "errors": 1, "tokens": 0}


def test_repeated_results_are_one_check_whose_assertions_add_up(tmp_path: Path) -> None:
    path = promptfoo_out(tmp_path, [promptfoo_row("t", passes=(True, True)), promptfoo_row("t", passes=(True, False))])
    (check,) = parse_promptfoo(path).checks
    assert (check.name, check.assertions, check.passed) == ("t > shout", 4, False)


def test_a_second_prompt_or_provider_joins_the_name(tmp_path: Path) -> None:
    rows = [promptfoo_row("t", prompt="p1"), promptfoo_row("t", prompt="p2"), promptfoo_row("t", provider="b", prompt="p1")]
    assert names(parse_promptfoo(promptfoo_out(tmp_path, rows))) == ["t > shout > p1", "t > shout > p2", "t > b > p1"]


def test_vars_name_a_test_without_description_never_its_index(tmp_path: Path) -> None:
    rows = [promptfoo_row(None, word="hi", n=3, obj={"a": [1]})]
    assert names(parse_promptfoo(promptfoo_out(tmp_path, rows))) == ['word=hi, n=3, obj={"a":[1]} > shout']


def test_a_test_without_assertions_asserted_nothing(tmp_path: Path) -> None:
    # What promptfoo 0.121 writes for a test without assert: a passing grade, no components.
    row = {**promptfoo_row("t", passes=()), "gradingResult": {"pass": True, "score": 1, "reason": "No assertions"}}
    (check,) = parse_promptfoo(promptfoo_out(tmp_path, [row])).checks
    assert check.assertions == 0
    assert judge(parse_promptfoo(promptfoo_out(tmp_path, [row])), None, 0, "").status is Status.FAILED


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"not json", "not JSON"), (b"[1]", 'no "results.results" list'), (b'{"results": {}}', 'no "results.results"')],
)
def test_unusable_promptfoo_output_is_one_line(tmp_path: Path, content: bytes, says: str) -> None:
    (tmp_path / "out.json").write_bytes(content)
    with pytest.raises(ReportError, match=says) as caught:
        parse_promptfoo(tmp_path / "out.json", "e/out.json")
    assert "\n" not in str(caught.value) and "e/out.json" in str(caught.value)


def test_a_missing_promptfoo_output_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such file; promptfoo did not write it - check -o"):
        parse_promptfoo(tmp_path / "out.json", "e/out.json")


# --- any input: checks or one line --------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
KEYS = st.sampled_from(["id", "epoch", "scores", "error", "value", "status", "eval", "task", "model", "results",
                        "samples", "metrics", "message", "testCase", "gradingResult", "componentResults", "success",
                        "failureReason", "provider", "prompt", "vars", "description", "assert", "label", "pass"])
TOOLISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10) | st.sampled_from(["C", "I", "success", "error"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=40,
)


def _one_outcome(parse) -> None:
    try:
        report = parse()
    except ReportError as exc:
        assert "\n" not in str(exc) and str(exc)
        return
    for check in report.checks:
        assert check.name and isinstance(check.assertions, int) and check.assertions >= 0
        assert check.message is None or "\n" not in check.message
    judge(report, None, 0, "")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(TOOLISH, JSON), as_samples=st.booleans())
def test_any_inspect_json_log_gives_checks_or_one_line(tmp_path_factory, body: Any, as_samples: bool) -> None:
    logs = tmp_path_factory.mktemp("logs")
    content = {**header(), "samples": body} if as_samples else body
    (logs / "a.json").write_text(json.dumps(content))
    _one_outcome(lambda: parse_inspect(logs, "logs"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=600), head=st.one_of(TOOLISH, st.just(header())), sample_body=TOOLISH,
       cut=st.integers(min_value=0, max_value=4000), zipped=st.booleans())
def test_any_inspect_eval_bytes_give_checks_or_one_line(tmp_path_factory, raw: bytes, head: Any, sample_body: Any,
                                                          cut: int, zipped: bool) -> None:
    logs = tmp_path_factory.mktemp("logs")
    if zipped:  # a zip of Inspect's shape, whose members hold anything, cut anywhere
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("header.json", json.dumps(head))
            archive.writestr("samples/1_epoch_1.json", json.dumps(sample_body))
        data = buffer.getvalue()
        raw = data[:cut] + raw if cut < len(data) else data
    (logs / "a.eval").write_bytes(raw)
    _one_outcome(lambda: parse_inspect(logs, "logs"))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.one_of(st.lists(TOOLISH, max_size=5), TOOLISH), stats=TOOLISH, raw=st.none() | st.binary(max_size=200))
def test_any_promptfoo_output_gives_checks_or_one_line(tmp_path_factory, rows: Any, stats: Any, raw: bytes | None) -> None:
    folder = tmp_path_factory.mktemp("pf")
    path = folder / "out.json"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(json.dumps({"results": {"results": rows, "stats": stats}}))
    _one_outcome(lambda: parse_promptfoo(path, "out.json"))


# --- through the CLI: where evalrun finds the logs, the manifest keys -------------------------------------------

def tool_manifest(run: tuple[str, ...] = ("python", "scorer.py"), **keys: object) -> str:
    return manifest(an_eval("tool", run, dir="e", **keys)).text


INSPECT_SCORER = f"""\
import os, shutil, sys
folder = os.environ["INSPECT_LOG_DIR"]
assert folder.startswith(os.environ["EVALRUN_WORKDIR"]), folder
if os.path.exists("write-log"):
    os.makedirs(folder)
    shutil.copy({str(ASSETS / "inspect-sample-error.eval")!r}, os.path.join(folder, "2026_quiz_x.eval"))
"""


def test_inspect_logs_are_read_from_the_fresh_folder_evalrun_gives_each_run(project) -> None:
    proj = project({"manifest.toml": tool_manifest(format="inspect"), "e/scorer.py": INSPECT_SCORER,
                    "e/write-log": ""})
    r = proj.run("t1")
    assert r.code == 1, r.output
    result = proj.eval_result("tool")
    assert 'check "quiz > b > includes" failed: sample errored: RuntimeError' in result["message"]
    assert len(result["checks"]) == 6
    (proj.root / "e" / "write-log").unlink()  # the next run writes no log: the last one's is not found
    r = proj.run("t1")
    assert r.code == 1, r.output
    assert "Inspect wrote no log there; evalrun sets INSPECT_LOG_DIR" in proj.eval_result("tool")["message"]


def test_a_promptfoo_output_left_by_an_earlier_run_is_deleted_before_the_scorer_starts(project) -> None:
    proj = project({"manifest.toml": tool_manifest(("python", "-c", "pass"), format="promptfoo", promptfoo="out/o.json"),
                    "e/out/o.json": (ASSETS / "promptfoo-out.json").read_text()})
    r = proj.run("t1")
    assert r.code == 1, r.output
    assert "promptfoo output e/out/o.json: no such file" in proj.eval_result("tool")["message"]


@pytest.mark.parametrize(
    ("keys", "says"),
    [({"format": "promptfoo"}, 'format = "promptfoo" needs promptfoo = "the file promptfoo eval -o writes"'),
     ({"format": "promptfoo", "promptfoo": "out.xml"}, "must end in .json"),
     ({"format": "promptfoo", "promptfoo": "../out.json"}, "lies outside the eval's folder"),
     ({"format": "json", "promptfoo": "out.json"}, 'only read with format = "promptfoo"'),
     ({"format": "inspect", "env": {"INSPECT_LOG_DIR": "logs"}}, "with format = \"inspect\" evalrun sets it")],
)
def test_tool_format_keys_in_the_manifest_are_checked_in_one_line(project, keys: dict, says: str) -> None:
    proj = project({"manifest.toml": tool_manifest(**keys), "e/scorer.py": "pass\n"})
    r = proj.run("t1")
    assert r.code == 2, r.output
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0] and "manifest.toml" in lines[0], r.err


# === where a mutation sample found the readers unwatched ===========================================================

# --- what a log may cost in memory ------------------------------------------------------------------------------


def _values(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    return 1


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.sampled_from([None, 1, 0]))
def test_json_values_counts_what_the_parser_would_make_without_making_it(value: Any, indent: int | None) -> None:
    raw = json.dumps(value, indent=indent, ensure_ascii=False).encode()
    assert json_values(raw) == _values(value)  # strings holding , [ { " \ do not count


def test_a_json_log_of_many_small_objects_is_refused_in_one_line_before_it_is_parsed(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    # 13 MB of "{}," would be 4.5 million dicts: about 350 MB of Python objects from a file well under every byte cap.
    many = b"[" + b",".join([b"{}"] * (VALUE_LIMIT + 500_000)) + b"]"
    head = json.dumps({**header(), "samples": [sample("q", match="C")]}).encode()
    (logs / "a.json").write_bytes(head[:-1] + b', "padding": ' + many + b"}")
    tracemalloc.start()
    try:
        with pytest.raises(ReportError) as caught:
            parse_inspect(logs, "logs")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(caught.value)
    assert message == ("inspect log logs/a.json: holds more than 4,000,000 JSON values, more than evalrun holds in "
                       "memory at once; let Inspect write .eval logs (its default), read a sample at a time")
    assert peak < 4 * len(many), peak  # the file and a copy without its strings, never the objects


def test_the_value_limit_holds_at_its_edge_in_a_json_log_and_in_a_member_of_an_eval(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inspect_log, "VALUE_LIMIT", 1000)
    head = {**header(), "samples": [sample("q", match="C")]}
    room = 1000 - _values(head) - 1  # the list "pad" and its items
    json_log(tmp_path / "ok", "a.json", {**header(), "pad": [0] * room}, [sample("q", match="C")])
    assert json_values((tmp_path / "ok" / "a.json").read_bytes()) == 1000
    assert [c.name for c in parse_inspect(tmp_path / "ok", "ok").checks] == ["quiz > q > match"]
    json_log(tmp_path / "over", "a.json", {**header(), "pad": [0] * (room + 1)}, [sample("q", match="C")])
    with pytest.raises(ReportError, match="holds more than 1,000 JSON values"):
        parse_inspect(tmp_path / "over", "over")
    big_sample = json.dumps({**sample("q", match="C"), "events": [{}] * 1000}).encode()
    eval_log(tmp_path / "zip", "a.eval", {"header.json": json.dumps(header()).encode(),
                                          "samples/q_epoch_1.json": big_sample})
    with pytest.raises(ReportError) as caught:
        parse_inspect(tmp_path / "zip", "zip")
    assert str(caught.value) == ("inspect log zip/a.eval: samples/q_epoch_1.json: holds more than 1,000 JSON values, "
                                 "more than evalrun holds in memory at once; split the task's samples smaller")


# --- what one .eval unpacks to in all ---------------------------------------------------------------------------


def test_an_eval_whose_members_together_unpack_past_the_total_cap_is_refused(tmp_path: Path, monkeypatch) -> None:
    assert inspect_log.TOTAL_LIMIT == 1024**3  # the 1 GiB docs/recipes-eval-tools.md promises; exercised smaller here
    monkeypatch.setattr(inspect_log, "TOTAL_LIMIT", 3 * 1024 * 1024)  # 1 GiB in use; each member stays far below 32 MiB
    pad = " " * (1024 * 1024)
    members = {"header.json": json.dumps(header()).encode()}
    for n in range(2):
        members[f"samples/q{n}_epoch_1.json"] = json.dumps({**sample(f"q{n}", match="C"), "pad": pad}).encode()
    eval_log(tmp_path / "two", "a.eval", members)
    assert len(parse_inspect(tmp_path / "two", "two").checks) == 2  # 2 MiB and a little: under the cap
    members["samples/q2_epoch_1.json"] = members["samples/q1_epoch_1.json"].replace(b'"q1"', b'"q2"')
    eval_log(tmp_path / "three", "a.eval", members)
    with pytest.raises(ReportError) as caught:
        parse_inspect(tmp_path / "three", "three")
    assert str(caught.value) == ("inspect log three/a.eval: samples/q2_epoch_1.json: the log decompresses to more than "
                                 "3 MiB in all, the most evalrun reads from one .eval; split the task's samples into "
                                 "several tasks")


# --- what a failure says ------------------------------------------------------------------------------------------


def test_an_inspect_failure_keeps_the_scorers_explanation_and_the_answer(tmp_path: Path) -> None:
    failing = {"id": "q", "epoch": 1, "scores": {"match": {"value": "I", "explanation": "expected 4,\n got 5",
                                                           "answer": "5"}}}
    json_log(tmp_path / "logs", "a.json", header(), [failing])
    (check,) = parse_inspect(tmp_path / "logs", "logs").checks
    assert (check.passed, check.message, check.evidence) == (False, "scored I: expected 4, got 5", "answer: 5")
    json_log(tmp_path / "bare", "a.json", header(), [{"id": "q", "scores": {"match": {"value": "I"}}}])
    (bare,) = parse_inspect(tmp_path / "bare", "bare").checks
    assert (bare.message, bare.evidence) == ("scored I", None)


@pytest.mark.parametrize("members", [
    {"header.json": json.dumps({"version": 2, "status": "success"}).encode()},
    {"header.json": json.dumps({**header(), "eval": "quiz"}).encode()},
    {"samples/q_epoch_1.json": json.dumps(sample("q", match="C")).encode()},  # neither header nor journal
], ids=["no-eval", "eval-not-an-object", "no-header-no-journal"])
def test_an_eval_whose_header_has_no_eval_object_is_refused_not_read_as_task_task(tmp_path: Path, members) -> None:
    eval_log(tmp_path / "logs", "a.eval", {**members, "samples/q_epoch_1.json": json.dumps(sample("q", match="C")).encode()})
    with pytest.raises(ReportError) as caught:
        parse_inspect(tmp_path / "logs", "logs")
    assert str(caught.value).startswith('inspect log logs/a.eval: not an Inspect log (no "eval" object in header.json); ')


def test_without_zstandard_a_compressed_eval_names_the_install(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard raises ImportError
    monkeypatch.setitem(sys.modules, "compression", None)  # and Python 3.14's compression.zstd too
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.eval").write_bytes((ASSETS / "inspect-sample-error.eval").read_bytes())
    with pytest.raises(ReportError) as caught:
        parse_inspect(logs, "logs")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("inspect log logs/a.eval: ")
    assert message.endswith(": is zstandard-compressed and this Python cannot read it; install zstandard "
                            "(pip install 'evalrun[inspect]') or let Inspect write JSON logs (INSPECT_LOG_FORMAT=json)")


# --- promptfoo: either road to "errored", and the caps on a name's parts ------------------------------------------


def _one(tmp_path: Path, row: dict[str, Any]):
    (check,) = parse_promptfoo(promptfoo_out(tmp_path, [row])).checks
    return check


def test_a_promptfoo_row_marked_errored_is_an_error_even_with_a_grade_and_no_error_text(tmp_path: Path) -> None:
    row = {**promptfoo_row("t", passes=(False,)), "failureReason": 2}
    check = _one(tmp_path, row)
    assert (check.passed, check.message) == (False, "error: the test errored")


def test_a_promptfoo_row_with_error_text_and_no_grade_is_an_error_whatever_its_failure_reason(tmp_path: Path) -> None:
    row = {**promptfoo_row("t", error="Error: rate limited\n    at call (x.js:1)"), "failureReason": 1}
    check = _one(tmp_path, row)
    assert (check.passed, check.message, check.evidence) == (
        False, "error: Error: rate limited", "Error: rate limited\n    at call (x.js:1)")


def test_a_graded_promptfoo_failure_with_error_text_is_an_ordinary_failed_assertion(tmp_path: Path) -> None:
    row = {**promptfoo_row("t", passes=(False,)), "error": "Expected X"}  # failureReason 1: an assertion failed
    check = _one(tmp_path, row)
    assert (check.passed, check.message) == (False, "contains: Expected X")


def test_each_part_of_a_promptfoo_check_name_is_capped(tmp_path: Path) -> None:
    rows = [promptfoo_row("d" * 500, provider="p" * 500, prompt="a" * 500),
            promptfoo_row("d" * 500, provider="p" * 500, prompt="b" * 500)]
    first, second = parse_promptfoo(promptfoo_out(tmp_path, rows)).checks
    assert first.name == " > ".join(["d" * 397 + "...", "p" * 197 + "...", "a" * 197 + "..."])
    assert second.name.endswith("b" * 197 + "...")


def test_the_log_file_limit_holds_at_its_edge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inspect_log, "LOG_FILE_LIMIT", 2)
    for n in range(2):
        json_log(tmp_path / "logs", f"{n}.json", header(task=f"t{n}"), [sample("q", match="C")])
    assert len(parse_inspect(tmp_path / "logs", "logs").checks) == 2
    json_log(tmp_path / "logs", "2.json", header(task="t2"), [sample("q", match="C")])
    with pytest.raises(ReportError, match="more than 2 log files, the most evalrun reads from one run"):
        parse_inspect(tmp_path / "logs", "logs")


def test_a_promptfoo_test_named_by_its_vars_or_index_caps_each_part(tmp_path: Path) -> None:
    rows = [promptfoo_row(None, **{"k" * 100: "v" * 200})]
    assert names(parse_promptfoo(promptfoo_out(tmp_path, rows))) == [
        f"{'k' * 77}...={'v' * 119}… > shout"]
    bare = {**promptfoo_row(None), "testIdx": 2}
    flagged = {**promptfoo_row(None), "testIdx": True}
    unnumbered = promptfoo_row(None)
    for row, name in ((bare, "test 3 > shout"), (flagged, "test > shout"), (unnumbered, "test > shout")):
        row["testCase"] = {"assert": row["testCase"]["assert"]}  # neither description nor vars
        row["vars"] = {}
        assert names(parse_promptfoo(promptfoo_out(tmp_path, [row]))) == [name]


def test_a_promptfoo_errors_first_line_reason_and_stack_are_capped(tmp_path: Path) -> None:
    error = "E" * 450 + "\n" + "    at frame\n" * 400
    check = _one(tmp_path, promptfoo_row("t", error=error))
    assert check.message == "error: " + "E" * 397 + "..."
    assert check.evidence.startswith(error[:2000]) and check.evidence.endswith(f"({len(error) - 2000} more bytes cut)")
    row = promptfoo_row("t", passes=(False,))
    row["gradingResult"]["componentResults"][0]["reason"] = "r" * 400
    assert _one(tmp_path, row).message == "contains: " + "r" * 297 + "..."


def test_a_zstandard_member_past_the_member_cap_is_refused_at_the_cap(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inspect_log, "MEMBER_LIMIT", 20_000)  # samples a (7,576 bytes) fits, b (37,846) does not
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.eval").write_bytes((ASSETS / "inspect-sample-error.eval").read_bytes())
    with pytest.raises(ReportError) as caught:
        parse_inspect(logs, "logs")
    assert str(caught.value) == ("inspect log logs/a.eval: samples/b_epoch_1.json: decompresses to more than "
                                 "0.0190735 MiB, the most evalrun reads")


def test_the_member_count_holds_at_its_edge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inspect_log, "_MEMBERS", 3)
    members = {"header.json": json.dumps(header()).encode()}
    for n in range(2):
        members[f"samples/q{n}_epoch_1.json"] = json.dumps(sample(f"q{n}", match="C")).encode()
    eval_log(tmp_path / "three", "a.eval", members)
    assert len(parse_inspect(tmp_path / "three", "three").checks) == 2
    members["samples/q2_epoch_1.json"] = json.dumps(sample("q2", match="C")).encode()
    eval_log(tmp_path / "four", "a.eval", members)
    with pytest.raises(ReportError, match="more than 3 members, more than evalrun reads"):
        parse_inspect(tmp_path / "four", "four")


def test_a_long_member_name_and_a_long_sample_id_are_capped(tmp_path: Path) -> None:
    member = "samples/" + "m" * 200 + ".json"
    eval_log(tmp_path / "bad", "a.eval", {"header.json": json.dumps(header()).encode(), member: b"{not json"})
    with pytest.raises(ReportError) as caught:
        parse_inspect(tmp_path / "bad", "bad")
    assert str(caught.value).startswith(f"inspect log bad/a.eval: {member[:119]}…: not JSON (")
    json_log(tmp_path / "long", "a.json", header(), [sample("i" * 400, match="C")])
    assert names(parse_inspect(tmp_path / "long", "long")) == [f"quiz > {'i' * 299}… > match"]


def test_logs_without_scored_samples_say_so_in_the_number_they_are(tmp_path: Path) -> None:
    json_log(tmp_path / "logs", "a.json", header(), [])
    assert parse_inspect(tmp_path / "logs", "logs").problem == "the Inspect log in logs holds no scored samples"
    json_log(tmp_path / "logs", "b.json", header(task="other"), [])
    assert parse_inspect(tmp_path / "logs", "logs").problem == "the Inspect logs in logs hold no scored samples"


def test_an_inspect_answer_is_evidence_cut_at_1000_bytes(tmp_path: Path) -> None:
    failing = {"id": "q", "scores": {"match": {"value": "I", "answer": "a" * 1500}}}
    json_log(tmp_path / "logs", "a.json", header(), [failing])
    (check,) = parse_inspect(tmp_path / "logs", "logs").checks
    assert check.evidence == "answer: " + "a" * 1000 + "\n... (500 more bytes cut)"


def test_a_failed_promptfoo_rows_output_is_its_evidence_and_no_output_none(tmp_path: Path) -> None:
    row = {**promptfoo_row("t", passes=(False,)), "response": {"output": "HELLO"}}
    assert _one(tmp_path, row).evidence == "output: HELLO"
    assert _one(tmp_path, promptfoo_row("t", passes=(False,))).evidence is None


def test_a_one_line_promptfoo_error_has_no_evidence_and_a_long_output_is_cut(tmp_path: Path) -> None:
    assert _one(tmp_path, promptfoo_row("t", error="Error: boom")).evidence is None
    row = {**promptfoo_row("t", passes=(False,)), "response": {"output": "O" * 1500}}
    assert _one(tmp_path, row).evidence == "output: " + "O" * 497 + "..."  # one line, as a message is
    row = {**promptfoo_row("t", passes=(False,)), "response": {"output": {"k": "O" * 1500}}}
    assert _one(tmp_path, row).evidence == "output: " + '{"k":"' + "O" * 993 + "\n... (3 more bytes cut)"
    row["response"] = {"output": {"k": "a" + "é" * 1500}}  # cut at 1000 bytes, not in the middle of a character
    assert _one(tmp_path, row).evidence == "output: " + '{"k":"a' + "é" * 496 + "\n... (995 more bytes cut)"


@pytest.mark.parametrize(("grading", "error", "says"), [
    ({"pass": False, "reason": "threshold not met", "componentResults": []}, None, "threshold not met"),
    ({"pass": False, "componentResults": []}, "the grader gave up", "the grader gave up"),
    ({"pass": False, "componentResults": []}, None, "promptfoo marked it failed"),
])
def test_a_failed_promptfoo_row_without_a_failed_assertion_says_why_it_failed(tmp_path: Path, grading, error, says) -> None:
    row = {**promptfoo_row("t"), "success": False, "failureReason": 1, "gradingResult": grading}
    if error is not None:
        row["error"] = error
    check = _one(tmp_path, row)
    assert (check.passed, check.message) == (False, says)


def test_a_task_run_twice_and_a_long_model_name_are_capped_where_they_show(tmp_path: Path) -> None:
    task = "t" * 100
    json_log(tmp_path / "twice", "a.json", header(task=task), [sample("q", match="C")])
    json_log(tmp_path / "twice", "b.json", header(task=task), [sample("q", match="C")])
    with pytest.raises(ReportError) as caught:
        parse_inspect(tmp_path / "twice", "twice")
    assert str(caught.value).startswith(f"inspect log twice/b.json: task '{'t' * 79}…' is also in twice/a.json; ")
    model = "m" * 300
    json_log(tmp_path / "models", "a.json", header(model=model), [sample("q", match="C")])
    json_log(tmp_path / "models", "b.json", header(model="other"), [sample("q", match="C")])
    assert names(parse_inspect(tmp_path / "models", "models"))[0] == f"quiz ({'m' * 199}…) > q > match"


def test_the_check_limit_holds_at_its_edge(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inspect_log, "CHECK_LIMIT", 2)
    json_log(tmp_path / "two", "a.json", header(), [sample("q", match="C"), sample("r", match="C")])
    assert len(parse_inspect(tmp_path / "two", "two").checks) == 2
    json_log(tmp_path / "three", "a.json", header(), [sample(n, match="C") for n in "qrs"])
    with pytest.raises(ReportError, match="more than 2 sample scores, the most evalrun reads"):
        parse_inspect(tmp_path / "three", "three")


def test_a_promptfoo_row_that_errored_before_grading_asserts_what_its_test_lists(tmp_path: Path) -> None:
    row = promptfoo_row("t", passes=(True, True), error="Error: boom")
    assert _one(tmp_path, row).assertions == 2
    del row["testCase"]["assert"]
    assert _one(tmp_path, row).assertions == 0
    failing = {**promptfoo_row("t"), "success": False, "failureReason": 1,
               "gradingResult": {"pass": False, "reason": "w" * 400, "componentResults": []}}
    assert _one(tmp_path, failing).message == "w" * 297 + "..."
