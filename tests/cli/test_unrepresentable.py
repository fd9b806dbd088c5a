"""Text a results file cannot hold: a lone surrogate in a report fails that eval alone, and a failed write never leaves the last run's file looking current."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import eval_entry

SURROGATE_NAME_SCORER = r'''
import os
with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    fh.write('{"checks": [{"name": "x\\ud800", "assertions": 1, "passed": true}]}')
'''

SURROGATE_TEXT_SCORER = r'''
import os
with open(os.environ["EVALRUN_REPORT"], "w") as fh:
    fh.write('{"checks": [{"name": "x", "assertions": 1, "passed": false, "message": "bad \\udfff here",'
             ' "evidence": "\\ud83d"}], "metrics": {"m\\ud800": "v\\udc00", "n": 1}}')
'''

GOOD = '''
from evalrun import scorer
with scorer.check("fine") as c:
    c.true(True)
'''


def test_a_check_name_that_is_not_unicode_fails_that_eval_alone_and_the_results_are_new(project) -> None:
    proj = project({
        "manifest.toml": "[tiers.t1]\n" + eval_entry("bad") + eval_entry("good"),
        "evals/bad/score.py": "print('placeholder')",
        "evals/good/score.py": GOOD,
        "baselines/t1.toml": "[good]\nfine = 1\n",
    })
    proj.write({"evals/bad/score.py": GOOD.replace("fine", "x")})
    assert proj.run("baseline", "--update", "t1").code == 0
    first = proj.run("t1")
    assert first.code == 0, first.output
    proj.write({"evals/bad/score.py": SURROGATE_NAME_SCORER})
    outcome = proj.run("t1")
    assert outcome.code == 1, outcome.output
    assert "internal error" not in outcome.output
    bad = proj.eval_result("bad")
    assert bad["status"] == "error" and "not valid Unicode" in bad["message"], bad
    assert proj.eval_result("good")["status"] == "passed"
    assert proj.results()["exit_code"] == 1  # the new run's file, not the last one's
    diff = proj.run("baseline", "diff", "t1")
    assert "match" not in diff.out, diff.output


def test_surrogates_in_messages_evidence_and_metrics_are_made_representable(project) -> None:
    proj = project({"manifest.toml": "[tiers.t1]\n" + eval_entry("a"), "evals/a/score.py": SURROGATE_TEXT_SCORER})
    outcome = proj.run("t1")
    assert outcome.code == 1, outcome.output
    assert "internal error" not in outcome.output
    result = proj.eval_result("a")
    check = result["checks"][0]
    assert check["message"] == "bad \ufffd here" and check["evidence"] == "\ufffd"
    assert result["metrics"] == {"m\ufffd": "v\ufffd", "n": 1}


def test_a_results_write_that_fails_removes_the_last_runs_file(tmp_path: Path) -> None:
    """Whatever stops the new file being written (here: text no file can hold), the old one is not left as current."""
    from evalrun.run.deliver import write
    from evalrun.run.requests import Outputs
    from harness.session import make_context
    from evalrun.reports_out.terminal import Console
    from evalrun.results import CheckResult, EvalResult, RunResults, Status, load_results, write_results

    def run(name: str, code: int) -> RunResults:
        return RunResults(evalrun_version="0", tier="t1", manifest="manifest.toml", started_at="2026-12-01T00:00:00+00:00",
                          finished_at="2026-12-01T00:00:01+00:00", exit_code=code,
                          evals=[EvalResult(name="a", tier="t1", dir="evals/a", status=Status.PASSED,
                                            checks=[CheckResult(name=name, assertions=1, passed=True)])])

    (tmp_path / "manifest.toml").write_text("")
    context = make_context(tmp_path / "manifest.toml", console=Console(env={}))
    path = tmp_path / ".evalrun" / "results" / "t1.json"
    path.parent.mkdir(parents=True)
    write_results(run("old", 0), path)
    assert load_results(path).exit_code == 0
    with pytest.raises(Exception):
        write(run("x\ud800", 1), Outputs(results=path), context)
    assert not path.exists()
    assert [p.name for p in path.parent.iterdir() if not p.name.startswith(".")] == []


# ---------------------------------------------------------------- any \u escape: a report evalrun can write, or one line

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_escapes = st.integers(0xD7F0, 0xE010).map(lambda n: f"\\u{n:04x}") | st.sampled_from(["a", "é", "\\\\", "\\n"])
_texts = st.lists(_escapes, min_size=1, max_size=5).map("".join)


@settings(max_examples=150, deadline=None)
@given(name=_texts, message=_texts, evidence=_texts, key=_texts, value=_texts)
def test_a_json_report_is_refused_in_one_line_or_read_into_text_every_file_can_hold(
    tmp_path_factory, name: str, message: str, evidence: str, key: str, value: str
) -> None:
    from evalrun.errors import ReportError
    from evalrun.reports_in.json_report import read_json_report
    from evalrun.reports_in.rules import judge

    path = Path(tmp_path_factory.mktemp("r")) / "report.json"
    path.write_text(
        f'{{"checks": [{{"name": "{name}", "assertions": 1, "passed": false, "message": "{message}", '
        f'"evidence": "{evidence}"}}], "metrics": {{"{key}": "{value}"}}}}', encoding="utf-8")
    try:
        parsed = read_json_report(path)
    except ReportError as exc:
        assert "not valid Unicode" in str(exc) and "\n" not in str(exc)
        str(exc).encode("utf-8")
        return
    verdict = judge(parsed, None, 0, "")
    texts = [verdict.message or "", *verdict.metrics, *map(str, verdict.metrics.values())]
    for c in verdict.checks:
        texts += [c.name, c.message or "", c.evidence or ""]
    for text in texts:
        text.encode("utf-8")  # no lone surrogate anywhere: results, baseline and history can hold it
