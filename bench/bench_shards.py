"""Benchmark: how evenly ``--shard`` splits a skewed suite, by what it balances with.

A suite of 200 evals with skewed durations (a few long, many short) is split
over 4 shards by evalrun's own planning (``evalrun.selection``: the same
``load_timings`` and ``select_shard`` a run calls), three ways:

- by name (round-robin), what a fresh CI runner without timings gets;
- by the last results file (one night's durations);
- by the history, once two nights are recorded (an SQLite history written by
  evalrun's own ``record_run``, as a merged run, as the CI's merge job does).

Each night's real durations are the eval's typical duration times run-to-run
noise (lognormal, ``--noise`` sigma: 0.1 by default, 0.25 for a very noisy
shared runner), drawn from a seeded generator. The figure is the next night's
longest shard divided by the ideal (its total / 4): what the CI waits for,
against a perfect split. Printed per strategy: the median and the worst over
``--seeds`` suites, and an oracle that plans on each eval's typical duration:
the noise floor no plan made before the night can beat. Goal (issue 37):
history balancing <= 1.15x the ideal.

    python bench/bench_shards.py [--evals 200] [--shards 4] [--seeds 20] [--noise 0.1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

from evalrun.history import record_run
from evalrun.manifest import load_manifest
from evalrun.plan import make_plan
from evalrun.results import CheckResult, EvalResult, RunResults, Status, write_results
from evalrun.selection.shards import Shard, select_shard
from evalrun.selection.timings import load_timings
from evalrun.workspace import Workspace

NOISE = 0.1


def typical_durations(rng: random.Random, evals: int) -> dict[str, float]:
    """A few long evals (3 %, 20-90 s), many short ones (about 1 s, lognormal)."""
    out = {}
    for i in range(evals):
        name = f"e{i:03d}"
        out[name] = rng.uniform(20, 90) if rng.random() < 0.03 else rng.lognormvariate(0, 0.6)
    return out


def night(rng: random.Random, typical: dict[str, float]) -> dict[str, float]:
    return {n: d * rng.lognormvariate(0, NOISE) for n, d in typical.items()}


def build(root: Path, names: list[str]) -> Path:
    lines = []
    for name in names:
        (root / "evals" / name).mkdir(parents=True, exist_ok=True)
        lines.append(f'[[evals]]\nname = "{name}"\ntier = "t1"\ndir = "evals/{name}"\nrun = ["true"]\n')
    (root / "manifest.toml").write_text("\n".join(lines))
    return root / "manifest.toml"


def results_of(durations: dict[str, float], n: int) -> RunResults:
    return RunResults(
        evalrun_version="bench", tier="t1", manifest="manifest.toml", started_at=f"2026-12-0{n}T03:00:00+00:00",
        run_id=f"bench-{n}", exit_code=0,
        evals=[EvalResult(name=name, tier="t1", dir=f"evals/{name}", status=Status.PASSED, exit_code=0,
                          duration_s=seconds, checks=[CheckResult(name="c", assertions=1, passed=True)])
               for name, seconds in durations.items()],
    )


def longest_over_ideal(plan_of, actual: dict[str, float], shards: int) -> float:
    loads = [sum(actual[p.name] for p in plan_of(i).evals) for i in range(1, shards + 1)]
    return max(loads) / (sum(actual.values()) / shards)


def one_suite(seed: int, evals: int, shards: int) -> dict[str, float]:
    rng = random.Random(seed)
    typical = typical_durations(rng, evals)
    nights = [night(rng, typical) for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        manifest = load_manifest(build(root, list(typical)))
        environ = {"EVALRUN_HISTORY_URL": f"sqlite:{root / 'history.sqlite'}"}
        results_path = Workspace(root).results("t1")
        for n, durations in enumerate(nights[:2], start=1):
            results = results_of(durations, n)
            write_results(results, results_path)
            warning = record_run(manifest, results, environ, source="merge")
            assert warning is None, warning
        plan = make_plan(manifest, "t1", [], [])
        by_history = load_timings(manifest, "t1", environ, results_path)
        by_results = load_timings(manifest, "t1", {"EVALRUN_HISTORY_URL": f"sqlite:{root / 'none.sqlite'}"}, results_path)
        assert by_history.source == "history" and by_history.samples == 2, by_history
        assert by_results.source == "results", by_results
        actual = nights[2]
        figures = {}
        for label, durations in (("names", None), ("last results", by_results.durations),
                                 ("history", by_history.durations), ("oracle", typical)):
            figures[label] = longest_over_ideal(lambda i: select_shard(plan, Shard(i, shards), durations), actual, shards)
        return figures


def main() -> int:
    global NOISE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evals", type=int, default=200)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--noise", type=float, default=NOISE, help="sigma of the run-to-run lognormal noise")
    args = parser.parse_args()
    NOISE = args.noise
    os.environ.setdefault("NO_COLOR", "1")
    per: dict[str, list[float]] = {"names": [], "last results": [], "history": [], "oracle": []}
    for seed in range(args.seeds):
        for label, figure in one_suite(seed, args.evals, args.shards).items():
            per[label].append(figure)
    print(f"{args.evals} evals, {args.shards} shards, {args.seeds} suites, noise sigma {NOISE:g}: the longest shard / "
          f"the ideal (total / {args.shards}), median (worst)")
    for label, figures in per.items():
        what = "planned on the typical durations (the floor)" if label == "oracle" else f"balanced by {label}"
        print(f"  {what:<46} {statistics.median(figures):.3f}x ({max(figures):.3f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
