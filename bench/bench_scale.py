"""Benchmarks of evalrun at scale (issue 9's targets), each beside a reference run in the same process.

1. Judging one report of 2,000 checks (read, validate, apply the rules) beside a
   plain ``json.loads`` of the same file. Target: under 10 ms.
2. ``evalrun t1 -j 2`` over 500 evals of 2,000 checks each, with the history
   recording on (the default SQLite file; the bench checks all 1,000,000 checks
   landed): evalrun's peak RSS (the scorers are tiny; they copy a prepared
   report). Target: under 300 MB. ``--history-off`` adds the same run without it.
3. ``evalrun baseline diff`` of a 1,000,000-check run (1,000 evals x 1,000 checks)
   against its baseline, beside a plain ``json.loads`` of the results file.
   Target: under 3 s and 600 MB. Wall time is shown beside the process's CPU
   time (user + system): on a shared machine the CPU time is what this code costs.

Run: ``python bench/bench_scale.py [--skip-500] [--history-off] [--only judge|many|million]``.
Times are medians of a few rounds; on a shared machine read the ratio to the
reference as much as the figure.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROUNDS = 5


def _report(checks: int) -> dict:
    return {
        "checks": [
            {"name": f"check {i:05d} stays green", "assertions": 1 + i % 5, "passed": True, "message": None}
            for i in range(checks)
        ],
        "metrics": {"latency_ms": 12.5},
    }


def bench_judge(folder: Path) -> None:
    from evalrun.reports_in.json_report import read_json_report
    from evalrun.reports_in.rules import judge

    path = folder / "report.json"
    path.write_text(json.dumps(_report(2000)))
    read_json_report(path)  # warm the validator's caches, as every eval after the first finds them

    def ours(clock: Callable[[], float]) -> float:
        start = clock()
        judge(read_json_report(path), None, 0, "")
        return clock() - start

    def reference(clock: Callable[[], float]) -> float:
        start = clock()
        json.loads(path.read_bytes())
        return clock() - start

    # Wall time, and this process's CPU time: on a loaded machine a few ms of wall time are mostly waiting.
    mine = statistics.median(ours(time.perf_counter) for _ in range(ROUNDS * 4))
    ref = statistics.median(reference(time.perf_counter) for _ in range(ROUNDS * 4))
    cpu = statistics.median(ours(time.process_time) for _ in range(ROUNDS * 4))
    cpu_ref = statistics.median(reference(time.process_time) for _ in range(ROUNDS * 4))
    print(f"judge 2,000-check report: {mine * 1000:.1f} ms wall, {cpu * 1000:.1f} ms CPU (json.loads alone "
          f"{ref * 1000:.1f} ms wall, {cpu_ref * 1000:.1f} ms CPU, ratio {cpu / cpu_ref:.1f}); "
          f"target 10 ms: {'MET' if mine < 0.010 else 'MISSED'} (CPU: {'MET' if cpu < 0.010 else 'MISSED'})")


def bench_many_checks(folder: Path, evals: int = 500, history: bool = True) -> None:
    report = folder / "prepared.json"
    report.write_text(json.dumps(_report(2000)))
    manifest = ["[tiers.t1]\n" if history else "[tiers.t1]\n[history]\nenabled = false\n"]
    scorer = folder / "write_report.py"  # not copy.py: it would shadow the stdlib module for python -m
    scorer.write_text(f"import os, shutil\nshutil.copyfile({str(report)!r}, os.environ['EVALRUN_REPORT'])\n")
    for i in range(evals):
        (folder / "evals" / f"e{i:03d}").mkdir(parents=True)
        manifest.append(f'[[evals]]\nname = "e{i:03d}"\ntier = "t1"\ndir = "evals/e{i:03d}"\nrun = ["python", "{scorer}"]\n')
    (folder / "manifest.toml").write_text("".join(manifest))
    # The default SQLite history, whatever the outer shell sets (an empty EVALRUN_HISTORY_URL records nothing).
    env = {**{k: v for k, v in os.environ.items() if k != "EVALRUN_HISTORY_URL"}, "CI": "1"}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]);"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)",
         sys.executable, "-m", "evalrun", "t1", "-j", "2", "--json", str(folder / "results.json")],
        cwd=folder, capture_output=True, text=True, env=env,
    )
    elapsed = time.perf_counter() - started
    maxrss_kb, code = proc.stdout.strip().splitlines()[-1].split()
    mb = int(maxrss_kb) / 1024
    stored = "history off"
    if history:
        import sqlite3

        with sqlite3.connect(folder / ".evalrun" / "history.sqlite") as db:
            count = db.execute("SELECT count(*) FROM evalrun_check_results").fetchone()[0]
        stored = f"history on, {count:,} checks recorded"
    print(f"{evals} evals x 2,000 checks ({stored}): evalrun peak RSS {mb:.0f} MB (largest process: evalrun, "
          f"not a scorer), {elapsed:.1f} s, exit {code}; target 300 MB: {'MET' if mb < 300 else 'MISSED'}")


def bench_million_diff(folder: Path) -> None:
    evals, checks = 1000, 1000
    (folder / "baselines").mkdir()
    manifest, results, baseline = ["[tiers.t1]\n"], [], {}
    for e in range(evals):
        name = f"eval-{e:04d}"
        (folder / "evals" / name).mkdir(parents=True)
        manifest.append(f'[[evals]]\nname = "{name}"\ntier = "t1"\ndir = "evals/{name}"\nrun = ["true"]\n')
        counts = {f"check {c:04d} of {name}": 1 + (e + c) % 7 for c in range(checks)}
        baseline[name] = counts
        results.append({"name": name, "tier": "t1", "dir": f"evals/{name}", "status": "passed",
                        "checks": [{"name": n, "assertions": a, "passed": True} for n, a in counts.items()]})
    (folder / "manifest.toml").write_text("".join(manifest))
    doc = {"version": 2, "evalrun_version": "bench", "tier": "t1", "manifest": "manifest.toml",
           "started_at": "2026-01-01T00:00:00Z", "evals": results}
    (folder / "results.json").write_text(json.dumps(doc))
    from evalrun.baseline import write_baseline

    write_baseline(folder / "baselines" / "t1.toml", baseline, "evalrun baseline --update t1")
    del results, baseline, doc
    times, cpus, rss, refs = [], [], [], []
    for _ in range(3):
        proc = subprocess.run(
            [sys.executable, "-c", "import resource, subprocess, sys, time; t = time.perf_counter(); "
             "r = subprocess.run(sys.argv[1:], capture_output=True); u = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss, r.returncode)",
             sys.executable, "-m", "evalrun", "baseline", "diff", "t1", "--from-results", "results.json"],
            cwd=folder, capture_output=True, text=True, env={**os.environ, "CI": "1"},
        )
        seconds, cpu, maxrss_kb, code = proc.stdout.strip().split()
        times.append(float(seconds))
        cpus.append(float(cpu))
        rss.append(int(maxrss_kb) / 1024)
        start = time.perf_counter()  # the reference, in the same moment of the machine's load
        json.loads((folder / "results.json").read_bytes())
        refs.append(time.perf_counter() - start)
    mine, cpu, ref = statistics.median(times), statistics.median(cpus), statistics.median(refs)
    print(f"baseline diff of 1,000,000 checks: {mine:.2f} s wall, {cpu:.2f} s CPU (json.loads of the results alone "
          f"{ref:.2f} s, ratio {mine / ref:.1f}), peak RSS {max(rss):.0f} MB, exit {code}; targets 3 s and 600 MB: "
          f"{'MET' if mine < 3 else 'MISSED'} (CPU: {'MET' if cpu < 3 else 'MISSED'}) / "
          f"{'MET' if max(rss) < 600 else 'MISSED'}")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in ("judge", "many", "million"):
            (root / name).mkdir()
        only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
        if only in (None, "judge"):
            bench_judge(root / "judge")
        if only in (None, "many") and "--skip-500" not in sys.argv:
            bench_many_checks(root / "many")
            if "--history-off" in sys.argv:
                (root / "many-off").mkdir()
                bench_many_checks(root / "many-off", history=False)
        if only in (None, "million"):
            bench_million_diff(root / "million")
    return 0


if __name__ == "__main__":
    sys.exit(main())
