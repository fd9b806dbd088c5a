"""Benchmark of the baseline gate at 100,000 checks (1,000 evals x 100 checks).

Times ``compare_to_baseline`` (best of 5) beside a reference, a plain dict
equality of the same data, and the file round trip (``write_baseline`` then
``load_baseline``) beside a bare ``tomllib.loads`` of the same file.
Target: compare under 1 s. Run: ``python bench/bench_baseline.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from evalrun.baseline import compare_to_baseline, load_baseline, write_baseline
from evalrun.reports_out.baseline_text import format_comparison
from evalrun.results import CheckResult, EvalResult, RunResults, Status

EVALS = 1_000
CHECKS = 100
REPEAT = 5
TARGET_S = 1.0
UPDATE = "evalrun baseline --update t1"


def build_baseline() -> dict[str, dict[str, int]]:
    return {
        f"eval-{e:04d}": {f"check {c:03d} of eval {e}": 1 + (e + c) % 7 for c in range(CHECKS)}
        for e in range(EVALS)
    }


def build_results(baseline: dict[str, dict[str, int]]) -> RunResults:
    """The same run with a handful of differences: a vanished, a weakened, a new, a stronger check."""
    current = {name: dict(counts) for name, counts in baseline.items()}
    del current["eval-0010"]["check 005 of eval 10"]
    current["eval-0200"]["check 050 of eval 200"] = 0
    current["eval-0300"]["brand new check"] = 3
    current["eval-0400"]["check 001 of eval 400"] += 5
    evals = [
        EvalResult(
            name=name,
            tier="t1",
            dir=f"evals/{name}",
            status=Status.PASSED,
            checks=[CheckResult(name=c, assertions=n, passed=True) for c, n in counts.items()],
        )
        for name, counts in current.items()
    ]
    return RunResults(
        evalrun_version="bench", tier="t1", manifest="manifest.toml", started_at="2024-01-01T00:00:00Z", evals=evals
    )


def best_of(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    baseline = build_baseline()
    results = build_results(baseline)
    names = set(baseline)
    total = sum(len(c) for c in baseline.values())
    print(f"baseline: {EVALS:,} evals x {CHECKS} checks = {total:,} checks; best of {REPEAT}")

    path = Path("baselines/t1.toml")
    cmp = compare_to_baseline(baseline, results, names, path, False, UPDATE)
    print(f"differences found: {len(cmp.regressions)} regressions, {len(cmp.stale)} stale")
    for line in format_comparison(cmp):
        print(f"  | {line}")

    t_compare = best_of(lambda: compare_to_baseline(baseline, results, names, path, False, UPDATE))

    def reference() -> bool:
        # What any comparison must at least do: read every count out of the results.
        return {e.name: e.check_counts() for e in results.evals} == baseline

    t_reference = best_of(reference)

    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "t1.toml"
        t_write = best_of(lambda: write_baseline(file, baseline, UPDATE))
        size = file.stat().st_size
        t_load = best_of(lambda: load_baseline(file))
        text = file.read_text(encoding="utf-8")
        t_tomllib = best_of(lambda: tomllib.loads(text))
        assert load_baseline(file) == baseline

    print()
    print(f"{'operation':<44}{'best (s)':>10}")
    print(f"{'compare_to_baseline':<44}{t_compare:>10.4f}")
    print(f"{'reference: dict equality of the same data':<44}{t_reference:>10.4f}")
    print(f"{'ratio compare / reference':<44}{t_compare / t_reference:>9.1f}x")
    print(f"{'write_baseline (own writer + atomic write)':<44}{t_write:>10.4f}   ({size / 1e6:.1f} MB)")
    print(f"{'load_baseline (read + parse + validate)':<44}{t_load:>10.4f}")
    print(f"{'reference: tomllib.loads of the same text':<44}{t_tomllib:>10.4f}")
    print(f"{'ratio load / tomllib':<44}{t_load / t_tomllib:>9.1f}x")
    print()
    met = t_compare < TARGET_S
    print(f"target: compare under {TARGET_S:.0f} s: {'MET' if met else 'NOT MET'} ({t_compare:.3f} s)")
    return 0 if met else 1  # like bench_replay: a missed target is a non-zero exit


if __name__ == "__main__":
    sys.exit(main())
