"""Benchmark: evalrun runs forked from the warm zygote against fresh ``python -m evalrun`` processes.

The own evals (gate-bites, manifest-errors) and the tests' ``Project.run``
start evalrun through ``evals/lib/evalrun_forks.py``. This runs the same
invocations both ways, side by side, alternating the order over several rounds
(the machine is shared and noisy, so only the ratio means anything):

  * reference: N fresh ``python -m evalrun t1`` processes, J at a time;
  * forked:    the same N runs through one Zygote, J at a time.

Each run is a one-eval project that passes. Prints each round's wall and CPU
times (user + system of the runs and their scorers; the forked runs are the
zygote's children, read from its /proc/<pid>/stat) and the median ratios, then ``evalrun t1`` on
this repository's own manifest (wall and CPU; the issue's target: under 8 s).

    python bench/bench_forks.py [--n 46] [--jobs 4] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "evals" / "lib"))
from evalrun_forks import Zygote  # noqa: E402

MANIFEST = '[[evals]]\nname = "a"\ntier = "t1"\ndir = "."\nrun = ["python", "score.py"]\n'
SCORER = (
    "import json, os\n"
    "json.dump({'checks': [{'name': 'ok', 'assertions': 1, 'passed': True}]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
)


def projects(root: Path, n: int) -> list[Path]:
    made = []
    for i in range(n):
        folder = root / f"p{i:03d}"
        folder.mkdir()
        (folder / "manifest.toml").write_text(MANIFEST)
        (folder / "score.py").write_text(SCORER)
        made.append(folder)
    return made


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_")}, "NO_COLOR": "1"}


def fresh(folder: Path) -> int:
    return subprocess.run([sys.executable, "-m", "evalrun", "t1"], cwd=folder, env=env(), capture_output=True).returncode


def children_cpu(zygote_pid: int) -> float:
    """CPU seconds of the children this process and the zygote have reaped (the forked runs are the zygote's)."""
    mine = os.times()
    fields = Path(f"/proc/{zygote_pid}/stat").read_text().rpartition(")")[2].split()
    theirs = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime
    return mine.children_user + mine.children_system + theirs


def timed(run, folders: list[Path], jobs: int, zygote_pid: int) -> tuple[float, float]:
    before, started = children_cpu(zygote_pid), time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        codes = list(pool.map(run, folders))
    wall = time.monotonic() - started
    assert set(codes) == {0}, codes
    return wall, children_cpu(zygote_pid) - before


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=46)  # as many evalrun starts as the own t1 evals make
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    walls, cpus = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folders = projects(Path(tmp), args.n)
        with Zygote(env()) as zygote:
            def forked(folder: Path) -> int:
                code = zygote.run(("t1",), folder, env(), folder / "out.txt", folder / "err.txt", 120)
                return -1 if code is None else code

            for round_ in range(args.rounds):
                order = [("fresh", fresh), ("forked", forked)]
                if round_ % 2:
                    order.reverse()
                got = {name: timed(run, folders, args.jobs, zygote.pid) for name, run in order}
                (fw, fc), (zw, zc) = got["fresh"], got["forked"]
                walls.append(zw / fw)
                cpus.append(zc / fc)
                print(f"round {round_ + 1}: fresh {fw:.2f} s wall {fc:.2f} s CPU; forked {zw:.2f} s wall {zc:.2f} s CPU")
    print(f"{args.n} runs, {args.jobs} at a time: forked/fresh = {statistics.median(walls):.2f} wall, "
          f"{statistics.median(cpus):.2f} CPU (median of {args.rounds})")
    before, started = os.times(), time.monotonic()
    own = subprocess.run([sys.executable, "-m", "evalrun", "t1"], cwd=REPO, env=env(), capture_output=True, text=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    wall = time.monotonic() - started
    verdict = "MET" if wall < 8 else "MISSED"
    print(f"evalrun t1 on the own manifest: {wall:.2f} s wall, {cpu:.2f} s CPU, exit {own.returncode}; target 8 s: {verdict}")
    return 0 if own.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
