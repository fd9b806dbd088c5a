"""Benchmark: repeats. evalrun's overhead on 50 evals x 10 repeats, and the runs early stop saves.

1. Overhead: ``evalrun t1 -j J`` on a manifest of 50 trivial evals with
   ``repeat = 10`` against ``xargs -P J`` running the same 500 scorer commands,
   side by side in one command, alternating the order over several rounds (the
   machine is shared and noisy, so only the ratio means anything). Target
   (issue 13): evalrun <= 1.10x xargs.
2. Early stop: the same 50 evals with ``stop = "decided"`` (floor 1.0), where
   half of them fail on their first run; prints the runs made of the 500
   planned and the share saved. Target: >= 40% saved.
3. With ``--vs-single``: the same 500 runs as 500 separate evals (no repeats),
   to show what repeats themselves cost (ratio repeats/single).

    python bench/bench_repeats.py [--evals 50] [--repeat 10] [--jobs 2] [--rounds 3] [--vs-single]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Fails when FAIL_FIRST is set and this is the first run (EVALRUN_REPEAT=0); under xargs it always passes.
SCORER = """\
import json, os, sys
path = os.environ.get("EVALRUN_REPORT") or sys.argv[1]
failed = bool(os.environ.get("FAIL_FIRST")) and os.environ.get("EVALRUN_REPEAT") == "0"
with open(path, "w") as fh:
    json.dump({"checks": [{"name": "trivial", "assertions": 1, "passed": not failed}]}, fh)
"""


def build(root: Path, evals: int, repeat: int, early_stop: bool) -> Path:
    lines = [f"[tiers.t1]\nrepeat = {repeat}\n" + ('stop = "decided"\n' if early_stop else "")]
    for i in range(evals):
        d = root / "evals" / f"e{i:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "score.py").write_text(SCORER)
        env = 'env = { FAIL_FIRST = "1" }\n' if early_stop and i % 2 == 0 else ""
        lines.append(f'[[evals]]\nname = "e{i:03d}"\ntier = "t1"\ndir = "evals/e{i:03d}"\nrun = ["python", "score.py"]\n{env}')
    (root / "manifest.toml").write_text("\n".join(lines))
    (root / "baselines").mkdir(exist_ok=True)
    args = root / "xargs.txt"
    args.write_text(
        "".join(f"{root}/evals/e{i:03d}/score.py\n{root}/evals/e{i:03d}/report-{k}.json\n"
                for k in range(repeat) for i in range(evals))
    )
    return args


def time_xargs(args: Path, jobs: int) -> float:
    start = time.perf_counter()
    with args.open() as fh:
        subprocess.run(["xargs", "-P", str(jobs), "-n", "2", sys.executable], stdin=fh, check=True)
    return time.perf_counter() - start


def run_evalrun(root: Path, jobs: int, ok: tuple[int, ...] = (0,)) -> tuple[float, dict]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR" and not k.startswith("EVALRUN_")}
    env["CI"] = "1"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun", "t1", "-j", str(jobs), "--json", str(root / "r.json")],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"evalrun exited {proc.returncode}: {proc.stderr[-500:]}")
    return elapsed, json.loads((root / "r.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--evals", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vs-single", action="store_true", help="also time the same runs as separate evals")
    a = parser.parse_args()
    planned = a.evals * a.repeat
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "overhead"
        args = build(root, a.evals, a.repeat, early_stop=False)
        ratios = []
        for r in range(a.rounds):
            if r % 2 == 0:
                x = time_xargs(args, a.jobs)
                e, _ = run_evalrun(root, a.jobs)
            else:
                e, _ = run_evalrun(root, a.jobs)
                x = time_xargs(args, a.jobs)
            ratios.append(e / x)
            print(f"round {r + 1}: xargs -P {a.jobs} {x:.2f} s   evalrun -j {a.jobs} {e:.2f} s   ratio {e / x:.3f}")
        med = statistics.median(ratios)
        print(f"{a.evals} evals x {a.repeat} repeats = {planned} runs, jobs={a.jobs}: median ratio evalrun/xargs = "
              f"{med:.3f} (target <= 1.10: {'met' if med <= 1.10 else 'NOT met'})")

        stop_root = Path(tmp) / "early-stop"
        build(stop_root, a.evals, a.repeat, early_stop=True)
        _, results = run_evalrun(stop_root, a.jobs, ok=(1,))
        made = sum(len(e["repeats"]["runs_detail"]) for e in results["evals"])
        failed = sum(e["status"] == "failed" for e in results["evals"])
        saved = 1 - made / planned
        print(f"early stop (half the evals fail on their first run; {failed} failed): {made} of {planned} runs made, "
              f"{saved:.0%} saved (target >= 40%: {'met' if saved >= 0.40 else 'NOT met'})")

        if a.vs_single:
            single = Path(tmp) / "single"
            build(single, planned, 1, early_stop=False)
            pairs = []
            for r in range(a.rounds):
                rep, one = run_evalrun(root, a.jobs)[0], run_evalrun(single, a.jobs)[0]
                pairs.append(rep / one)
                print(f"round {r + 1}: {a.evals} x {a.repeat} repeats {rep:.2f} s   {planned} single evals {one:.2f} s")
            print(f"repeats vs the same runs as separate evals: median ratio {statistics.median(pairs):.3f}")


if __name__ == "__main__":
    main()
