"""Benchmark: what evalrun costs beyond the work it runs, measured side by side.

The machine is shared: every figure comes from runs taken in turn, round by
round (the order rotates each round), and the median over rounds is quoted with
its range. Four figures, each with its target (issue 36, "Speed, restated"):

  overhead  WALL time (what a user waits for) of ``evalrun t1 -j J`` over N
            trivial Python scorers, and of the floor, each divided by the wall
            time of ``xargs -P J`` running the same scorers' commands in the
            same round. Target: median evalrun/xargs <= median floor/xargs +
            0.05. The floor is one interpreter that imports typer, pydantic
            and the manifest's schema module (``evalrun.manifest.schema``)
            ONLY, then execs the same xargs: what any evalrun built on typer
            and pydantic pays before it runs a scorer. Not ``evalrun.cli`` nor
            ``evalrun.results``: those are evalrun's own cost, and counted.
  per-scorer evalrun's own CPU per scorer: the CPU time of evalrun's own
            process (``getrusage(RUSAGE_SELF)``, every thread, read at exit by
            an ``atexit`` hook of a wrapper that starts evalrun as the console
            script does), over a manifest of N scorers minus over a manifest of
            1 scorer, divided by N - 1, per round (the two runs taken in turn).
            The difference cancels the fixed start; the scorers' own CPU is in
            their processes (RUSAGE_CHILDREN), never in this figure.
            Target: <= 1.0 ms.
  fixed     evalrun's fixed start: the same own-process CPU of ``evalrun t1``
            over 1 scorer, less one per-scorer cost (the intercept: imports,
            manifest, plan, and the once-a-run writes), against the CPU of an
            interpreter importing what the floor imports (the same wrapper,
            the same ``RUSAGE_SELF``). Target: <= 1.3x.
  startup   ``evalrun --version`` against ``python -c "import typer"``, CPU of
            the whole process tree (``os.wait4``). Target: <= 1.2x.

Every project measured is what ``evalrun t1`` meets on a pull request: a git checkout with its baseline
committed, so each run reads and compares the baseline and records HEAD in the history as users' runs do.

As root (or with unprivileged user namespaces) the run phase of t1 runs in a
network namespace entered by a thread of evalrun's own process, so
``RUSAGE_SELF`` holds it. Without either, evalrun forks that phase into a child
(``evalrun.run.isolation``), whose CPU ``RUSAGE_SELF`` would miss: the bench then
sets ``network = "host"`` on the CPU runs (not on the wall-time overhead run) and
says so.

    python bench/bench_overhead.py [--only overhead|cpu|startup] [--n 200] [--jobs 2] [--rounds 5]

Before measuring, the bench compiles evalrun's modules once (``compileall``,
what ``pip install`` does for an installed package), and the installed
packages a run imports (typer, pydantic, typing_extensions...): where the
environment sets ``PYTHONDONTWRITEBYTECODE`` (container images often do), an
editable checkout, or a package installed without bytecode, would otherwise be
compiled from source in every run (typing_extensions alone: about 20 ms, in the
floor too). ``__pycache__/`` is gitignored; up-to-date bytecode is left as it is.
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

FLOOR_IMPORTS = "import typer, pydantic, evalrun.manifest.schema"
OVERHEAD_MARGIN = 0.05  # evalrun/xargs <= floor/xargs + this
PER_SCORER_MS = 1.0
FIXED_RATIO = 1.3
STARTUP_RATIO = 1.2

# Own-process CPU, read when the interpreter exits (after evalrun's own atexit work: ours is registered first).
RUSAGE_HOOK = (
    "import atexit, os, resource\n"
    "def _own():\n"
    "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    with open(os.environ['BENCH_RUSAGE'], 'w') as fh:\n"
    "        fh.write(repr(u.ru_utime + u.ru_stime))\n"
    "atexit.register(_own)\n"
)
EVALRUN_WRAPPER = RUSAGE_HOOK + "import sys\nsys.argv[0] = 'evalrun'\nfrom evalrun.__main__ import main\nmain()\n"
FLOOR_WRAPPER = RUSAGE_HOOK + FLOOR_IMPORTS + "\n"


def as_users_have_it(root: Path, evalrun: list[str], env: dict[str, str]) -> None:
    """The project as ``evalrun t1`` meets it on a pull request: a git checkout with its baseline committed (the run
    reads and compares the baseline, and records HEAD's commit, branch and state in the history)."""
    subprocess.run([*evalrun, "baseline", "--update", "t1"], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    (root / ".gitignore").write_text(".evalrun/\nown-rusage.txt\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "the project"], cwd=root, check=True)


def measure(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(cpu seconds of the whole tree, wall seconds) of one run; its output is thrown away."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return usage.ru_utime + usage.ru_stime, wall


def own_cpu(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """CPU seconds of the started interpreter's own process (RUSAGE_SELF at its exit)."""
    out = cwd / "own-rusage.txt"
    measure(argv, cwd, dict(env, BENCH_RUSAGE=str(out)))
    return float(out.read_text())


def rounds_of(commands: dict[str, object], rounds: int) -> list[dict[str, object]]:
    """Each command once per round, the order rotated round by round; one warm-up round first."""
    names = list(commands)
    for name in names:
        commands[name]()  # type: ignore[operator]
    out = []
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        out.append({name: commands[name]() for name in order})  # type: ignore[operator]
    return out


def spread(values: list[float], fmt: str = "{:.3f}") -> str:
    return f"median {fmt.format(statistics.median(values))} (min {fmt.format(min(values))}, max {fmt.format(max(values))})"


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def bench_overhead(root: Path, evalrun: list[str], n: int, jobs: int, rounds: int, env: dict[str, str]) -> None:
    xargs_args = build(root / "wall", n)
    as_users_have_it(root / "wall", evalrun, env)
    xargs = ["xargs", "-a", str(xargs_args), "-P", str(jobs), "-n", "2", sys.executable]
    floor_code = f"import os\n{FLOOR_IMPORTS}\nos.execvp('xargs', {xargs!r})"
    cwd = root / "wall"
    commands = {
        "evalrun": lambda: measure([*evalrun, "t1", "-j", str(jobs)], cwd, env),
        "floor": lambda: measure([sys.executable, "-c", floor_code], cwd, env),
        "xargs": lambda: measure(xargs, cwd, env),
    }
    results = rounds_of(commands, rounds)
    print(f"overhead: wall time over xargs -P {jobs} ({n} trivial scorers), {rounds} rounds")
    for i, r in enumerate(results, 1):
        print(f"  round {i}: evalrun {r['evalrun'][1]:.2f} s  floor {r['floor'][1]:.2f} s  xargs {r['xargs'][1]:.2f} s"
              f"  (cpu {r['evalrun'][0]:.2f} / {r['floor'][0]:.2f} / {r['xargs'][0]:.2f} s)")
    ev = [r["evalrun"][1] / r["xargs"][1] for r in results]
    fl = [r["floor"][1] / r["xargs"][1] for r in results]
    ev_cpu = [r["evalrun"][0] / r["xargs"][0] for r in results]
    fl_cpu = [r["floor"][0] / r["xargs"][0] for r in results]
    margin = statistics.median(ev) - statistics.median(fl)
    print(f"  evalrun/xargs wall {spread(ev)}; floor/xargs wall {spread(fl)}")
    print(f"  evalrun's own share (wall): {margin:+.3f}  target <= +{OVERHEAD_MARGIN}: {verdict(margin <= OVERHEAD_MARGIN)}")
    print(f"  (cpu, no target: evalrun/xargs {spread(ev_cpu)}; floor/xargs {spread(fl_cpu)})")


def bench_cpu(root: Path, n: int, jobs: int, rounds: int, env: dict[str, str]) -> None:
    host = os.geteuid() != 0 and not _userns_possible()
    for name, count in (("one", 1), ("many", n)):
        build(root / name, count)
        if host:
            with (root / name / "manifest.toml").open("a") as fh:
                fh.write('\n[tiers.t1]\nnetwork = "host"\n')
        as_users_have_it(root / name, [sys.executable, "-m", "evalrun"], env)
    wrapper = [sys.executable, "-c", EVALRUN_WRAPPER, "t1", "-j", str(jobs)]
    commands = {
        "one": lambda: own_cpu(wrapper, root / "one", env),
        "many": lambda: own_cpu(wrapper, root / "many", env),
        "floor": lambda: own_cpu([sys.executable, "-c", FLOOR_WRAPPER], root / "one", env),
    }
    results = rounds_of(commands, rounds)
    print(f"cpu: evalrun's own process (RUSAGE_SELF), t1 -j {jobs} over 1 and over {n} scorers, {rounds} rounds"
          + (' (network = "host": the run phase would be forked here)' if host else ""))
    for i, r in enumerate(results, 1):
        print(f"  round {i}: 1 scorer {r['one']:.3f} s  {n} scorers {r['many']:.3f} s  floor import {r['floor']:.3f} s")
    per = [(r["many"] - r["one"]) / (n - 1) for r in results]
    fixed = [(r["one"] - p) / r["floor"] for r, p in zip(results, per)]
    per_ms = statistics.median(per) * 1000
    print(f"  per scorer: {spread([p * 1000 for p in per], '{:.3f}')} ms"
          f"  target <= {PER_SCORER_MS} ms: {verdict(per_ms <= PER_SCORER_MS)}")
    print(f"  fixed start / floor import: {spread(fixed)}"
          f"  target <= {FIXED_RATIO}: {verdict(statistics.median(fixed) <= FIXED_RATIO)}")


def _userns_possible() -> bool:
    try:
        return Path("/proc/sys/kernel/unprivileged_userns_clone").read_text().strip() == "1"
    except OSError:
        return False


def bench_startup(root: Path, evalrun: list[str], rounds: int, env: dict[str, str]) -> None:
    commands = {
        "evalrun": lambda: measure([*evalrun, "--version"], root, env),
        "typer": lambda: measure([sys.executable, "-c", "import typer"], root, env),
    }
    results = rounds_of(commands, rounds)
    ratio = [r["evalrun"][0] / r["typer"][0] for r in results]
    print(f"startup: evalrun --version against python -c 'import typer', cpu of the tree, {rounds} rounds")
    print(f"  evalrun {spread([r['evalrun'][0] for r in results])} s; import typer {spread([r['typer'][0] for r in results])} s")
    print(f"  ratio {spread(ratio)}  target <= {STARTUP_RATIO}: {verdict(statistics.median(ratio) <= STARTUP_RATIO)}")


def compile_evalrun() -> None:
    """Bytecode for evalrun's modules and for the installed packages a run imports, as ``pip install`` leaves
    them (see the docstring). Without it a package installed without bytecode (typing_extensions here: 20 ms)
    is compiled in every run, the floor's and evalrun's alike, and the ratios move with what happened to be
    compiled last."""
    import compileall
    import sysconfig

    import typer._adapters  # noqa: F401 - what typer imports only when it parses
    import evalrun.cli  # noqa: F401
    import evalrun.commands.run  # noqa: F401
    import evalrun.history.sqlite  # noqa: F401

    compileall.compile_dir(Path(evalrun.__file__).parent, quiet=2)
    site = Path(sysconfig.get_paths()["purelib"])
    tops = {name.split(".")[0] for name in list(sys.modules)}
    for top in sorted(tops):
        module = sys.modules.get(top)
        where = Path(getattr(module, "__file__", None) or "/")
        if site not in where.parents:
            continue
        if where.name == "__init__.py":
            compileall.compile_dir(where.parent, quiet=2)
        else:
            compileall.compile_file(where, quiet=2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["overhead", "cpu", "startup"])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    compile_evalrun()
    evalrun = [sys.executable, "-m", "evalrun"]
    if shutil.which("evalrun"):
        evalrun = [shutil.which("evalrun") or "evalrun"]  # the console script, as users start it
    env = dict(os.environ, CI="1")
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.only in (None, "overhead"):
            bench_overhead(root, evalrun, args.n, args.jobs, args.rounds, env)
        if args.only in (None, "cpu"):
            bench_cpu(root, args.n, args.jobs, args.rounds, env)
        if args.only in (None, "startup"):
            bench_startup(root, evalrun, max(args.rounds, 9), env)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
