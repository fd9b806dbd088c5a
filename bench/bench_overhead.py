"""Benchmark: what evalrun costs beyond the work it runs, as ratios measured side by side.

Two pairs, each run in turn (A B A B ...) over several rounds, the ratio taken
pair by pair and its median quoted (the machine is shared: only ratios mean
anything, and CPU seconds more than wall seconds):

  overhead  ``evalrun t1 -j J`` over N trivial Python scorers, against
            ``xargs -P J`` running the same scorers' commands. Target: <= 1.05.
  startup   ``evalrun --version`` against ``python -c "import typer"``.
            Target: <= 1.2.
  floor     what no evalrun built on typer and pydantic can go below: importing
            them and building the manifest and results models evalrun validates
            with, then ``xargs -P J`` running the scorers, against the same
            xargs alone. ``overhead`` cannot come out under this ratio (plus
            what Python's own spawn and wait cost over xargs'); no target.

Each figure is the whole process tree's CPU time (user + system of the
command and every child it waited for, from ``os.wait4``) and its wall time.

    python bench/bench_overhead.py [--only overhead|startup] [--n 200] [--jobs 2] [--rounds 5]

Before measuring, the bench compiles evalrun's modules once (``compileall``,
what ``pip install`` does for an installed package): where the environment
sets ``PYTHONDONTWRITEBYTECODE`` (container images often do), an editable
checkout would otherwise compile every module from source in every run, a
tenth of a second of CPU that no installed evalrun spends, and the warm-up
round could not help. ``__pycache__/`` is gitignored; up-to-date bytecode is
left as it is.

CPU time is the figure to read on a shared machine: the wall time of
``evalrun`` can even come out lower than xargs', because each scorer starts a
session of its own, which the kernel's autogroup scheduler gives its own share.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_runner import build  # noqa: E402 - the same trivial scorers and manifest as bench_runner

TARGETS = {"overhead": 1.05, "startup": 1.2}
NO_TARGET = ("floor",)
FLOOR_IMPORTS = "import typer._adapters, evalrun.cli, evalrun.manifest.schema, evalrun.results"


def measure(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(cpu seconds of the whole tree, wall seconds) of one run; its output is thrown away."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return usage.ru_utime + usage.ru_stime, wall


def pairs(a: list[str], b: list[str], cwd: Path, rounds: int) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    env = dict(os.environ, CI="1")
    measure(a, cwd, env), measure(b, cwd, env)  # warm-up: caches, bytecode
    out = []
    for r in range(rounds):
        if r % 2 == 0:
            ma = measure(a, cwd, env)
            mb = measure(b, cwd, env)
        else:
            mb = measure(b, cwd, env)
            ma = measure(a, cwd, env)
        out.append((ma, mb))
    return out


def report(name: str, a: str, b: str, results: list[tuple[tuple[float, float], tuple[float, float]]]) -> None:
    cpu = [ma[0] / mb[0] for ma, mb in results]
    wall = [ma[1] / mb[1] for ma, mb in results]
    print(f"{name}: A = {a}\n{' ' * len(name)}  B = {b}")
    for i, (ma, mb) in enumerate(results, 1):
        print(f"  round {i}: A cpu {ma[0]:.3f} s wall {ma[1]:.2f} s   B cpu {mb[0]:.3f} s wall {mb[1]:.2f} s"
              f"   A/B cpu {cpu[i - 1]:.3f} wall {wall[i - 1]:.3f}")
    med = statistics.median(cpu)
    verdict = ""
    if name in TARGETS:
        verdict = f"  target cpu <= {TARGETS[name]}: {'met' if med <= TARGETS[name] else 'NOT met'}"
    print(f"  A/B cpu median {med:.3f} (min {min(cpu):.3f}, max {max(cpu):.3f});"
          f" wall median {statistics.median(wall):.3f} (min {min(wall):.3f}, max {max(wall):.3f}){verdict}")


def compile_evalrun() -> None:
    """Bytecode for evalrun's modules, as an installed package has it (see the docstring)."""
    import compileall

    import evalrun

    compileall.compile_dir(Path(evalrun.__file__).parent, quiet=2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=sorted([*TARGETS, *NO_TARGET]))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compile_evalrun()
    evalrun = [sys.executable, "-m", "evalrun"]
    if shutil.which("evalrun"):
        evalrun = [shutil.which("evalrun") or "evalrun"]  # the console script, as users start it
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.only in (None, "overhead"):
            xargs_args = build(root, args.n)
            (root / "baselines").mkdir()
            a = [*evalrun, "t1", "-j", str(args.jobs)]
            b = ["xargs", "-a", str(xargs_args), "-P", str(args.jobs), "-n", "2", sys.executable]
            report("overhead", " ".join(a[-3:]), f"xargs -P {args.jobs} (the same {args.n} scorers)",
                   pairs(a, b, root, args.rounds))
        if args.only in (None, "floor"):
            xargs_args = root / "xargs.txt"
            if not xargs_args.exists():
                xargs_args = build(root, args.n)
            xargs = f"xargs -a {xargs_args} -P {args.jobs} -n 2 {sys.executable}"
            a = ["sh", "-c", f"{sys.executable} -c '{FLOOR_IMPORTS}' && {xargs}"]
            b = ["sh", "-c", xargs]
            report("floor", "typer, pydantic and the models imported, then xargs", f"xargs -P {args.jobs} alone",
                   pairs(a, b, root, args.rounds))
        if args.only in (None, "startup"):
            a = [*evalrun, "--version"]
            b = [sys.executable, "-c", "import typer"]
            report("startup", "evalrun --version", 'python -c "import typer"', pairs(a, b, root, max(args.rounds, 9)))


if __name__ == "__main__":
    main()
