"""manifest-errors: every broken manifest is one line naming the file and the place.

This scorer owns the end-to-end proof of evalrun's manifest messages. Each
``cases/*.toml`` is one broken manifest whose header says what evalrun must
print, one ``# expect:`` comment a line::

    # expect: evals[1] ("slow").timeout: must be > 0     <- right after "FILE: "
    # expect: move the eval to t2                        <- anywhere in the line

The first expectation must follow ``evalrun: error: <file>: `` directly (the
place comes first); later ones may appear anywhere in the line. Each case is
copied into a fresh folder under ``$EVALRUN_WORKDIR`` and given to both
``evalrun dry --manifest`` and ``evalrun t1 --manifest``, each in a process of
its own (a ``python -m evalrun`` forked from a warm one: ``evals/lib/evalrun_forks.py``).
Both must exit 2 with exactly one line on stderr, nothing on stdout, no Python
traceback, and ``t1`` must not write a results file. One check per case file.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from evalrun import scorer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from evalrun_forks import Zygote  # noqa: E402  (evals/lib: shared with gate-bites)

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
EXPECT = "# expect:"
RUN_LIMIT_S = 60.0  # loading a manifest takes well under a second
WORKERS = 4


@dataclass(frozen=True)
class Case:
    path: Path
    expect: tuple[str, ...]  # expect[0] follows "FILE: "; the rest appear anywhere

    @property
    def file(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Invocation:
    """One evalrun command run over one broken manifest."""

    argv: tuple[str, ...]
    exit_code: int | None  # None: it did not finish within RUN_LIMIT_S
    stdout: str
    stderr: str
    results_written: bool


def load_cases() -> list[Case]:
    """Every ``cases/*.toml``, sorted by name, with its ``# expect:`` lines."""
    cases = []
    for path in sorted(CASES.glob("*.toml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        expect = tuple(ln[len(EXPECT) :].strip() for ln in lines if ln.startswith(EXPECT))
        cases.append(Case(path=path, expect=expect))
    return cases


def run_case(zygote: Zygote, case: Case, workdir: Path) -> list[Invocation]:
    """Copy the case into a fresh folder and run ``dry`` and ``t1`` over it."""
    folder = workdir / case.path.stem
    folder.mkdir(parents=True)
    shutil.copyfile(case.path, folder / case.file)
    return [
        _run(zygote, folder, ("dry", "--manifest", case.file)),
        _run(zygote, folder, ("t1", "--manifest", case.file, "-j", "2", "--json", "results.json")),
    ]


def _run(zygote: Zygote, folder: Path, args: tuple[str, ...]) -> Invocation:
    results = folder / "results.json"
    results.unlink(missing_ok=True)
    out, err = folder.with_name(f"{folder.name}.{args[0]}.out"), folder.with_name(f"{folder.name}.{args[0]}.err")
    code, stdout, stderr = run_evalrun(zygote, args, folder, out, err)
    return Invocation(args, code, stdout, stderr, results.exists())


# -- evalrun in a process of its own ----------------------------------------------
#
# Each invocation is a ``python -m evalrun`` of its own: its own process and
# session, folder, environment, stdin, stdout and stderr. The processes are
# forked from one that imported evalrun once (evals/lib/evalrun_forks.py says
# how a child is made to match a fresh one).


def case_environment() -> dict[str, str]:
    """evalrun's own variables belong to the outer run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_")}
    env["NO_COLOR"] = "1"
    return env


def run_evalrun(zygote: Zygote, args: tuple[str, ...], folder: Path, out: Path, err: Path) -> tuple[int | None, str, str]:
    """Run ``evalrun ARGS`` in ``folder``; its exit code (None: past RUN_LIMIT_S), stdout and stderr."""
    code = zygote.run(args, folder, case_environment(), out, err, RUN_LIMIT_S)
    return code, _read_text(out), _read_text(err)


def _read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def assert_case(c: scorer.Check, case: Case, invocations: list[Invocation]) -> None:
    c.evidence("\n".join(f"evalrun {' '.join(i.argv)} -> {i.exit_code}\n{i.stdout}{i.stderr}" for i in invocations))
    c.true(case.expect, f"{case.file} says what to expect in a '{EXPECT}' comment")
    for inv in invocations:
        command = f"evalrun {inv.argv[0]}"
        c.equal(inv.exit_code, 2, f"{command}: exit code")
        c.not_contains(inv.stdout + inv.stderr, "Traceback", f"{command}: no Python traceback")
        c.equal(inv.stdout, "", f"{command}: nothing on stdout")
        lines = inv.stderr.splitlines()
        c.equal(len(lines), 1, f"{command}: one line on stderr")
        prefix = f"evalrun: error: {case.file}: {case.expect[0]}"
        c.true(lines[0].startswith(prefix), f"{command}: the line starts with {prefix!r}, got {lines[0]!r}")
        for text in case.expect[1:]:
            c.contains(lines[0], text, f"{command}")
        if inv.argv[0] == "t1":
            c.false(inv.results_written, f"{command}: no results file for a manifest that cannot load")


def main() -> None:
    cases = load_cases()
    workdir = Path(os.environ.get("EVALRUN_WORKDIR") or tempfile.mkdtemp(prefix="manifest-errors-"))
    started = time.monotonic()
    with Zygote(case_environment()) as zygote, ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [pool.submit(run_case, zygote, case, workdir) for case in cases]
        for case, future in zip(cases, futures):  # recorded in name order
            with scorer.check(f"rejects {case.file}") as c:
                assert_case(c, case, future.result())
    scorer.metric("cases", len(cases))
    scorer.metric("wall_s", round(time.monotonic() - started, 2))
    scorer.finish()


if __name__ == "__main__":
    main()
