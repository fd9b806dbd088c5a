"""Benchmark: evalrun's overhead against xargs running the same scorers.

Generates N trivial Python scorers, then runs them side by side in this one
command, alternating the order over several rounds (the machine is shared and
noisy, so only the ratio means anything):

  * reference: ``xargs -P J`` running each scorer's command directly;
  * evalrun:   ``evalrun t1 -j J`` on a manifest of the same N evals.

Prints each round's wall times and the median ratio. Target (issue 2):
evalrun <= 1.15x xargs at N=500, J=2.

    python bench/bench_runner.py [--n 500] [--jobs 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCORER = """\
import json, os, sys
path = os.environ.get("EVALRUN_REPORT") or sys.argv[1]
with open(path, "w") as fh:
    json.dump({"checks": [{"name": "trivial", "assertions": 1, "passed": True}]}, fh)
"""


def build(root: Path, n: int) -> Path:
    lines = []
    for i in range(n):
        d = root / "evals" / f"e{i:04d}"
        d.mkdir(parents=True)
        (d / "score.py").write_text(SCORER)
        lines.append(f'[[evals]]\nname = "e{i:04d}"\ntier = "t1"\ndir = "evals/e{i:04d}"\nrun = ["python", "score.py"]\n')
    (root / "manifest.toml").write_text("\n".join(lines))
    args = root / "xargs.txt"
    args.write_text("".join(f"{root}/evals/e{i:04d}/score.py\n{root}/evals/e{i:04d}/report.json\n" for i in range(n)))
    return args


def time_xargs(args: Path, jobs: int) -> float:
    start = time.perf_counter()
    with args.open() as fh:
        subprocess.run(["xargs", "-P", str(jobs), "-n", "2", sys.executable], stdin=fh, check=True)
    return time.perf_counter() - start


def time_evalrun(root: Path, jobs: int) -> float:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR",)}
    env["CI"] = "1"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun", "t1", "-j", str(jobs), "--json", str(root / "r.json")],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0,):
        raise SystemExit(f"evalrun exited {proc.returncode}: {proc.stderr[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        args = build(root, a.n)
        (root / "baselines").mkdir()
        ratios = []
        for r in range(a.rounds):
            if r % 2 == 0:
                x, e = time_xargs(args, a.jobs), time_evalrun(root, a.jobs)
            else:
                e, x = time_evalrun(root, a.jobs), time_xargs(args, a.jobs)
            ratios.append(e / x)
            print(f"round {r + 1}: xargs -P {a.jobs} {x:.2f} s   evalrun -j {a.jobs} {e:.2f} s   ratio {e / x:.3f}")
        med = statistics.median(ratios)
        print(f"N={a.n} jobs={a.jobs}: median ratio evalrun/xargs = {med:.3f} (target <= 1.15: {'met' if med <= 1.15 else 'NOT met'})")


if __name__ == "__main__":
    main()
