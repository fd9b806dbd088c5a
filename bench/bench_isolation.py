"""Benchmark: what the isolation fallback (evalrun.sandbox) costs a scorer's start, and a run.

Starts N scorers (``python -c pass``, the cheapest real scorer) the way evalrun
does (``process.spawn`` + wait), J at a time, both ways, alternating the order
over several rounds (the machine is shared and noisy, so only the ratio means
anything):

  * reference: ``spawn`` from the worker threads, unrestricted;
  * fallback:  ``spawn(..., sandbox=...)``: handed to the restricted thread (seccomp + Landlock) and started there.

Also times what a run pays once: ``isolation.fallback_for`` (a restricted thread
made and ended, to learn the machine offers it) plus the ``Sandbox`` the scorers
start from. Prints each round, the median ratio and the per-scorer difference.

    python bench/bench_isolation.py [--n 40] [--jobs 4] [--rounds 5] [--tier t1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from evalrun.run.isolation import fallback_for
from evalrun.process import spawn
from evalrun.sandbox import Rules, Sandbox


def start_all(n: int, jobs: int, sandbox: Sandbox | None) -> float:
    def one(_: int) -> None:
        proc = spawn([sys.executable, "-S", "-c", "pass"], Path.cwd(), os.environ, stdout=subprocess.DEVNULL,
                     sandbox=sandbox)
        proc.wait()

    began = time.perf_counter()
    with ThreadPoolExecutor(jobs) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - began


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tier", default="t1", choices=["t1", "t2"])
    args = parser.parse_args()
    began = time.perf_counter()
    mechanism, why = fallback_for(args.tier)
    sandbox, why = Sandbox.open(Rules(args.tier, None if args.tier == "t1" else (5432,)))
    once = time.perf_counter() - began
    if mechanism is None or sandbox is None:
        print(f"no fallback here: {why}")
        return 1
    ratios, diffs = [], []
    try:
        for round_ in range(args.rounds):
            order = [None, sandbox] if round_ % 2 == 0 else [sandbox, None]
            times = {("fallback" if s else "reference"): start_all(args.n, args.jobs, s) for s in order}
            ratios.append(times["fallback"] / times["reference"])
            diffs.append((times["fallback"] - times["reference"]) / args.n * args.jobs)
            print(f"round {round_ + 1}: reference {times['reference']:.3f} s, fallback {times['fallback']:.3f} s "
                  f"({args.n} scorers, {args.jobs} at a time)")
    finally:
        sandbox.close()
    print(f"{mechanism} ({args.tier}): once a run {once * 1000:.1f} ms; per scorer: median ratio "
          f"{statistics.median(ratios):.3f}, median difference {statistics.median(diffs) * 1000:+.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
