"""Run results for the history tests: small ones in many shapes, and big ones for the streamed writes.

Imported by test modules and by the writer processes they start (tests/ on
their PYTHONPATH), so it needs nothing of pytest.
"""

from __future__ import annotations

from evalrun.results import BaselineChange, BaselineComparison, CheckResult, EvalResult, RunResults, Status


def results(n: int, *, passed: bool = True, tier: str = "t1", evidence: str | None = None) -> RunResults:
    return RunResults(
        evalrun_version="0.1.0",
        tier=tier,
        manifest="manifest.toml",
        started_at=f"2026-12-01T03:{n // 60:02d}:{n % 60:02d}+00:00",
        finished_at=f"2026-12-01T03:{n // 60:02d}:{n % 60:02d}+00:00",
        evals=[
            EvalResult(name="alpha", tier=tier, dir="evals/alpha", status=Status.PASSED if passed else Status.FAILED,
                       checks=[CheckResult(name="one", assertions=3, passed=passed,
                                           message=None if passed else "expected 3, got 2", evidence=evidence),
                               CheckResult(name="two", assertions=1, passed=True)],
                       metrics={"latency_ms": 100 + n, "label": "x"}, duration_s=1.5, exit_code=0,
                       models={"provider": "openai", "models": ["gpt-x"], "calls": 2, "tokens": {"total": 42}}),
            EvalResult(name="beta", tier=tier, dir="evals/beta", status=Status.SKIPPED, message="env KEY is not set"),
        ],
        baseline=BaselineComparison(path="baselines/t1.toml", exists=True, regressions=[
            BaselineChange(eval="alpha", check="gone", kind="vanished-check", baseline=2,
                           message='alpha: check "gone" vanished (baseline: 2 assertions)')]),
        exit_code=0 if passed else 1,
    )


def big_results(evals: int = 4, checks: int = 50) -> RunResults:
    return RunResults(
        evalrun_version="0.1.0", tier="t1", manifest="manifest.toml", started_at="2026-12-01T03:00:00+00:00",
        evals=[EvalResult(name=f"e{e}", tier="t1", dir=f"evals/e{e}", status=Status.PASSED, exit_code=0,
                          checks=[CheckResult(name=f"c{c}", assertions=1 + c % 3, passed=True) for c in range(checks)])
               for e in range(evals)],
        exit_code=0,
    )
