"""Benchmark of the HTML report at 100 runs x 100 evals (3 checks and 2 metrics each).

Builds the runs, appends them to a SQLite history, then times (best of 3) the
read of the last 100 runs from the history, and rendering plus writing the
report; prints the file size. Targets: under 3 MB, written in under 2 s (the
history read plus the render and write, as ``evalrun report --html`` does).
Both wall-clock and CPU time are printed; the target is judged on CPU time,
because on a machine shared with other jobs the wall clock measures the queue.
Run: ``python bench/bench_html.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evalrun.history.location import parse_history_url
from evalrun.history.records import GitInfo, make_record
from evalrun.history.backends import open_store
from evalrun.reports_out.html import write_html_report
from evalrun.results import BaselineComparison, CheckResult, EvalResult, RunResults, Status

RUNS, EVALS, CHECKS = 100, 100, 3
REPEAT = 3
MAX_BYTES, MAX_SECONDS = 3_000_000, 2.0


def build_run(n: int) -> RunResults:
    evals = []
    for e in range(EVALS):
        flaky = e % 17 == 0 and n % 5 == 0  # some checks flip now and then
        broken = e == 42 and n >= 90  # one check fails for good from run 90
        checks = []
        for c in range(CHECKS):
            failed = (c == 0 and flaky) or (c == 1 and broken)
            checks.append(CheckResult(name=f"check {c} of eval {e}", assertions=1 + (e + c) % 5, passed=not failed,
                                      message="expected 3, got 2" if failed else None,
                                      evidence=("state: " + "row " * 200) if failed else None))
        evals.append(EvalResult(
            name=f"eval-{e:03d}", tier="t3", dir=f"evals/eval-{e:03d}",
            status=Status.FAILED if any(not c.passed for c in checks) else Status.PASSED,
            checks=checks, metrics={"latency_ms": 100 + (n * 7 + e) % 50, "cost_usd": 0.01 * (1 + e % 3)},
            duration_s=1.0 + (e % 10) / 10, exit_code=0,
            models={"provider": "openai", "models": ["gpt-x"], "calls": 3, "tokens": {"total": 900 + e}, "mode": "live"},
        ))
    return RunResults(evalrun_version="bench", tier="t3", manifest="manifest.toml",
                      started_at=f"2026-0{1 + n // 30}-{1 + n % 28:02d}T03:00:00+00:00", evals=evals,
                      baseline=BaselineComparison(path="baselines/t3.toml", exists=True), exit_code=0)


def best_of(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall, CPU) seconds, each the best of REPEAT."""
    wall = cpu = float("inf")
    for _ in range(REPEAT):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        location = parse_history_url(f"sqlite:{tmp}/history.sqlite", Path(tmp), "bench")
        store = open_store(location)
        start = time.perf_counter()
        for n in range(RUNS):
            store.append(make_record(build_run(n), GitInfo(f"{n:040x}", "main", False), "run"))
        t_append = (time.perf_counter() - start) / RUNS
        runs = store.runs("t3", RUNS)
        assert len(runs) == RUNS
        out = Path(tmp) / "report.html"
        t_read = best_of(lambda: store.runs("t3", RUNS))
        t_write = best_of(lambda: write_html_report(out, runs))
        store.close()
        size = out.stat().st_size
    total = t_read[1] + t_write[1]
    print(f"report of {RUNS} runs x {EVALS} evals x {CHECKS} checks; best of {REPEAT}")
    print(f"{'':<42}{'wall':>8}  {'CPU':>8}")
    print(f"{'append one run to SQLite (mean)':<42}{t_append:>8.3f} s")
    print(f"{'read the last 100 runs from SQLite':<42}{t_read[0]:>8.3f}  {t_read[1]:>8.3f} s")
    print(f"{'render and write the report':<42}{t_write[0]:>8.3f}  {t_write[1]:>8.3f} s")
    print(f"{'report size':<42}{size / 1e6:>8.2f} MB")
    ok = size < MAX_BYTES and total < MAX_SECONDS
    print(f"target: under {MAX_BYTES / 1e6:.0f} MB and under {MAX_SECONDS:.0f} s of CPU (read + write): "
          f"{'MET' if ok else 'NOT MET'} ({size / 1e6:.2f} MB, {total:.2f} s)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
