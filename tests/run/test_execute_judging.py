"""How execute turns a finished process into an eval's result, for outcomes a test cannot easily provoke."""

from __future__ import annotations

from pathlib import Path

from evalrun.run.outcome import judge_outcome as _judge_outcome
from evalrun.manifest import EvalSpec
from evalrun.plan import PlannedEval
from evalrun.process import ProcessOutcome
from evalrun.results import Status


def test_a_tap_stream_that_could_not_be_saved_fails_with_the_reason(tmp_path: Path) -> None:
    # The disk filled while the scorer's stdout was streamed to a file: what was saved is a stub.
    stdout = tmp_path / "stdout"
    stdout.write_text("1..2\nok 1 - first\n")  # the second point was lost, with the plan's promise
    spec = EvalSpec(name="tap", tier="t1", dir="e", run=["x"], format="tap")
    outcome = ProcessOutcome(
        argv=("x",), exit_code=0, timed_out=False, cancelled=False, start_error=None, duration_s=0.1,
        stdout_tail=b"", stderr_tail=b"", stdout_bytes=100, stderr_bytes=0,
        stdout_path_error="No space left on device",
    )
    result = _judge_outcome(PlannedEval(spec, tmp_path), "t1", outcome, tmp_path / "report.json", stdout, 0.1)
    assert result.status is Status.ERROR
    assert "stdout could not be saved (No space left on device)" in (result.message or "")


def test_execute_starts_the_evals_in_the_order_given_and_keeps_results_in_plan_order(tmp_path: Path) -> None:
    # The order evalrun.selection.timings gives (longest first); one worker, so the starts are in that order.
    import os
    import sys

    from evalrun.run.execute import ExecuteRequest, execute

    marker = tmp_path / "started.txt"
    scorer = tmp_path / "score.py"
    scorer.write_text(
        "import json, os\n"
        f"open({str(marker)!r}, 'a').write(os.environ['EVALRUN_EVAL'] + '\\n')\n"
        "json.dump({'checks': [{'name': 'ran', 'assertions': 1, 'passed': True}]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
    )
    planned = [PlannedEval(EvalSpec(name=n, tier="t1", dir=".", run=[sys.executable, str(scorer)]), tmp_path)
               for n in ("a", "b", "long")]
    outcome = execute(ExecuteRequest(evals=planned, tier="t1", jobs=1, base_env=dict(os.environ), order=[2, 0, 1]))
    assert marker.read_text().split() == ["long", "a", "b"]
    assert [r.name for r in outcome.results] == ["a", "b", "long"]
    assert all(r.status is Status.PASSED for r in outcome.results)
