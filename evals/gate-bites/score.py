"""gate-bites: evalrun's own gate fails every way a suite rots, and can pass.

This scorer owns the end-to-end proof that the gate bites. Each check copies a
small fixture project from ``cases/<fixture>/`` (a manifest, stub scorers and,
for the baseline cases, a committed ``baselines/t1.toml``) into a fresh folder
under ``$EVALRUN_WORKDIR``, runs evalrun there in a process of its own (a
``python -m evalrun ...`` forked from a warm one: ``evals/lib/evalrun_forks.py``),
and asserts its exit code, the key lines of its output and what its results
file records.

The cases run concurrently; the checks are recorded in the order of ``CASES``,
so the report and the baseline stay stable.

``GATE_BITES_BREAK=MODE[:CASE]`` deliberately breaks the expectations (MODE is
``exit``, ``text`` or ``status``; CASE is one case id, default every case), so
that tests can show this eval fails when the behaviour it guards changes.
``GATE_BITES_CASES=ID[,ID...]`` runs only those cases (in report order), so such
a test need not run every case again.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalrun import scorer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
from evalrun_forks import Zygote  # noqa: E402  (evals/lib: shared with manifest-errors)

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "cases"
BREAK_VAR = "GATE_BITES_BREAK"
CASES_VAR = "GATE_BITES_CASES"
BREAK_MODES = ("exit", "text", "status")
RUN_LIMIT_S = 60.0  # far above any case; only a hung evalrun reaches it
WORKERS = 4  # cases at once, on a small CI machine (the timeout case mostly waits)
TIER = ("t1", "-j", "2", "--json", "results.json")


@dataclass(frozen=True)
class Outcome:
    """What one evalrun invocation did, in its copied fixture folder."""

    folder: Path
    exit_code: int | None  # None: it did not finish within RUN_LIMIT_S
    stdout: str
    stderr: str
    results: dict[str, Any] | None  # the parsed results file, if one was written
    results_problem: str | None = None  # the file exists but is not JSON

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


Extra = Callable[[scorer.Check, Outcome], None]  # more assertions, after the common ones


@dataclass(frozen=True)
class Case:
    """One way the gate must behave, and what evalrun must say about it."""

    id: str
    check: str  # the check's name: a baseline key, so keep it stable
    fixture: str  # folder under cases/
    args: tuple[str, ...]  # evalrun's arguments
    exit: int
    texts: tuple[str, ...] = ()  # each must appear somewhere in stdout or stderr
    lines: tuple[str, ...] = ()  # each must be a whole line of stdout or stderr
    statuses: Mapping[str, str] | None = field(default_factory=dict)  # None: no results file may appear
    regressions: tuple[str, ...] = ()  # the kinds of baseline regressions recorded
    stale: tuple[str, ...] | None = None  # the kinds of stale-baseline changes, when it matters
    results_file: str = "results.json"
    extra: Extra | None = None
    slow: bool = False  # started first, so the cases finish sooner


# -- extra assertions -----------------------------------------------------------


def _grandchild_is_gone(c: scorer.Check, outcome: Outcome) -> None:
    pid_file = outcome.folder / "grandchild.pid"
    c.true(pid_file.is_file(), "the hanging scorer wrote its grandchild's pid")
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10.0  # generous: a loaded machine tears a group down slowly
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)  # do not leak it past this check
    c.false(alive, f"grandchild {pid} (ignores SIGTERM) is still alive after the timeout")


def _shows_no_stack_frame(c: scorer.Check, outcome: Outcome) -> None:
    c.not_contains(outcome.output, 'File "', "the crash is shown as its exception line, not a stack frame")


def _only_an_error_line(c: scorer.Check, outcome: Outcome) -> None:
    c.equal(len(outcome.stderr.splitlines()), 1, "a configuration error is one line on stderr")
    c.true(outcome.stderr.startswith("evalrun: error: "), "the line says it is evalrun's error")


def _says_nothing_of_the_baseline(c: scorer.Check, outcome: Outcome) -> None:
    c.not_contains(outcome.output, "regression", "a matching baseline reports no regression")
    c.not_contains(outcome.output, "stale", "a matching baseline is not stale")


def _baseline_is_unchanged(c: scorer.Check, outcome: Outcome) -> None:
    before = (FIXTURES / "refused-update" / "baselines" / "t1.toml").read_bytes()
    after = (outcome.folder / "baselines" / "t1.toml").read_bytes()
    c.equal(after, before, "a refused update leaves baselines/t1.toml byte for byte as it was")


def _no_scorer_started(c: scorer.Check, outcome: Outcome) -> None:
    c.false((outcome.folder / "started.marker").exists(), "no scorer started")


def _only_the_unguarded_eval_ran(c: scorer.Check, outcome: Outcome) -> None:
    marker = outcome.folder / "started.marker"
    ran = marker.read_text().split() if marker.exists() else []
    c.equal(ran, ["invoices"], "the skipped eval's scorer did not start")


def _rate_is(c: scorer.Check, outcome: Outcome, eval_name: str, passes: int, flaky: bool = False) -> None:
    result = next((e for e in (outcome.results or {}).get("evals", []) if e["name"] == eval_name), {})
    check = next((k for k in result.get("checks", []) if k["name"] == "answer is right"), {})
    rate = check.get("rate") or {}
    c.equal((rate.get("passes"), rate.get("runs")), (passes, 10), "the check's passes and runs in the results file")
    c.equal(rate.get("flaky"), flaky, "flaky is recorded")
    c.equal((result.get("repeats") or {}).get("flaky"), ["answer is right"] if flaky else [], "the eval lists its flaky checks")


# -- the cases, in report order -----------------------------------------------

CASES: tuple[Case, ...] = (
    Case(
        id="failing-check",
        check="a failing check fails the gate",
        fixture="failing-check",
        args=TIER,
        exit=1,
        texts=('check "totals add up" failed: order total: expected 5, got 4',),
        lines=("evalrun t1: failed (exit 1)",),
        statuses={"orders": "failed"},
    ),
    Case(
        id="zero-assertions",
        check="a check with zero assertions fails",
        fixture="zero-assertions",
        args=TIER,
        exit=1,
        texts=('check "totals add up" failed: asserted nothing',),
        statuses={"orders": "failed"},
    ),
    Case(
        id="empty-report",
        check="a report with no checks fails",
        fixture="empty-report",
        args=TIER,
        exit=1,
        texts=("the report has no checks",),
        statuses={"orders": "failed"},
    ),
    Case(
        id="nonzero-exit",
        check="a non-zero exit fails despite a passing report",
        fixture="nonzero-exit",
        args=TIER,
        exit=1,
        texts=("exited 3 although its report says 1 of 1 checks passed",),
        statuses={"orders": "error"},
    ),
    Case(
        id="invalid-report",
        check="an invalid report fails and names the field",
        fixture="invalid-report",
        args=TIER,
        exit=1,
        texts=("invalid report: checks[0].assertions: 'many' is not of type 'integer'",),
        statuses={"orders": "error"},
    ),
    Case(
        id="timeout",
        check="a timeout kills the scorer's whole process group",
        fixture="timeout-grandchild",
        args=TIER,
        exit=1,
        texts=("timed out after 3 s",),
        statuses={"hangs": "timeout"},
        extra=_grandchild_is_gone,
        slow=True,
    ),
    Case(
        id="crash",
        check="a crash shows the exception line, not a stack frame",
        fixture="crash",
        args=TIER,
        exit=1,
        texts=("exited 1: KeyError: 'tenant'",),
        statuses={"tenants": "error"},
        extra=_shows_no_stack_frame,
    ),
    Case(
        id="program-not-found",
        check="a missing scorer program is named",
        fixture="program-not-found",
        args=TIER,
        exit=1,
        texts=("program not found: evalrun-no-such-scorer",),
        statuses={"orders": "error"},
    ),
    Case(
        id="passing",
        check="a passing project passes",
        fixture="passing",
        args=TIER,
        exit=0,
        lines=("2 passed, 0 failed, 0 skipped", "evalrun t1: passed (exit 0)"),
        statuses={"orders": "passed", "shell": "passed"},
        stale=(),
        extra=_says_nothing_of_the_baseline,
    ),
    Case(
        id="nothing-selected",
        check="nothing selected exits 5",
        fixture="passing",
        args=(*TIER, "--tag", "nope"),
        exit=5,
        texts=("nothing selected to run in t1 (filters: --tag nope)",),
        lines=("evalrun t1: nothing was selected to run (exit 5)",),
        statuses={},
    ),
    Case(
        id="bad-manifest",
        check="a bad manifest is a configuration error",
        fixture="bad-manifest",
        args=TIER,
        exit=2,
        texts=('evalrun: error: manifest.toml: evals[0] ("slow").timeout: must be > 0',),
        statuses=None,
        extra=_only_an_error_line,
    ),
    Case(
        id="vanished-check",
        check="a vanished check is a regression",
        fixture="vanished-check",
        args=TIER,
        exit=3,
        lines=(
            'regression: orders: check "refunds are negative" vanished (baseline: 2 assertions)',
            "evalrun t1: baseline regressed (exit 3)",
        ),
        statuses={"orders": "passed"},
        regressions=("vanished-check",),
    ),
    Case(
        id="weakened-check",
        check="a weakened check is a regression",
        fixture="weakened-check",
        args=TIER,
        exit=3,
        lines=('regression: orders: check "totals add up" asserts 1 (baseline: 4)',),
        statuses={"orders": "passed"},
        regressions=("weakened",),
    ),
    Case(
        id="vanished-eval",
        check="a vanished eval is a regression",
        fixture="vanished-eval",
        args=TIER,
        exit=3,
        lines=("regression: invoices: eval vanished from the manifest (baseline: 1 check, 2 assertions)",),
        statuses={"orders": "passed"},
        regressions=("vanished-eval",),
    ),
    Case(
        id="stale-baseline",
        check="a stale baseline is a note, not a failure",
        fixture="stale-baseline",
        args=TIER,
        exit=0,
        lines=(
            "baseline is stale: 1 new check; run: evalrun baseline --update t1",
            '  orders: new check "tax is rounded" (1 assertion)',
        ),
        statuses={"orders": "passed"},
        stale=("new-check",),
    ),
    Case(
        id="stale-strict",
        check="a stale baseline is a regression under --strict-baseline",
        fixture="stale-baseline",
        args=(*TIER, "--strict-baseline"),
        exit=3,
        lines=(
            'regression: orders: new check "tax is rounded" (1 assertion)',
            "evalrun t1: baseline regressed (exit 3)",
        ),
        statuses={"orders": "passed"},
        regressions=("new-check",),
        stale=(),
    ),
    Case(
        id="refused-update",
        check="baseline --update refuses a failing state",
        fixture="refused-update",
        args=("baseline", "--update", "t1", "-j", "2"),
        exit=1,
        texts=("evalrun: error: baseline not updated: 1 eval did not pass: orders (failed)",),
        statuses={"orders": "failed"},
        results_file=".evalrun/results/t1.json",
        extra=_baseline_is_unchanged,
    ),
    Case(
        id="unmet-probe",
        check="an unmet precondition skips loudly, never a pass",
        fixture="unmet-probe",
        args=TIER,
        exit=4,
        texts=("SKIP", "orders  env GATE_BITES_NEVER_SET is not set", "1 passed, 0 failed, 1 skipped"),
        lines=("evalrun t1: not everything was checked (exit 4)",),
        statuses={"orders": "skipped", "invoices": "passed"},
        extra=_only_the_unguarded_eval_ran,
    ),
    Case(
        id="skips-fail",
        check='skips = "fail" turns a skip into a failure',
        fixture="skips-fail",
        args=TIER,
        exit=1,
        texts=("skips are failures here: env GATE_BITES_NEVER_SET is not set",),
        statuses={"orders": "failed"},
        extra=_no_scorer_started,
    ),
    Case(
        id="tier-guard",
        check="an unmet tier guard refuses the tier, no scorer starts",
        fixture="tier-guard",
        args=TIER,
        exit=2,
        texts=("tier t1 requires env:GATE_BITES_NEVER_SET: env GATE_BITES_NEVER_SET is not set; refusing",),
        statuses=None,
        extra=_no_scorer_started,
    ),
    # -- repeats: cases/repeats runs each eval 10 times; flaky.py fails the runs its FLAKY_FAIL names
    Case(
        id="repeats-under-floor",
        check="a check passing 7 of 10 under floor 0.8 fails",
        fixture="repeats",
        args=(*TIER, "-e", "under-floor"),
        exit=1,
        texts=('check "answer is right" passed 7 of 10 (floor 0.8)',),
        lines=("evalrun t1: failed (exit 1)",),
        statuses={"under-floor": "failed"},
        extra=lambda c, o: _rate_is(c, o, "under-floor", 7),
        slow=True,
    ),
    Case(
        id="repeats-flaky",
        check="a check passing 9 of 10 over floor 0.8 passes and is listed as flaky",
        fixture="repeats",
        args=(*TIER, "-e", "flaky"),
        exit=0,
        lines=('  FLAKY flaky: check "answer is right" passed 9 of 10 (floor 0.8)', "evalrun t1: passed (exit 0)"),
        statuses={"flaky": "passed"},
        extra=lambda c, o: _rate_is(c, o, "flaky", 9, flaky=True),
        slow=True,
    ),
    Case(
        id="repeats-decay",
        check="a pass rate falling from 10 of 10 to 3 of 10 is a regression",
        fixture="repeats",
        args=(*TIER, "-e", "decay"),
        exit=3,
        lines=(
            'regression: decay: check "answer is right" passes 3 of 10 (30%), baseline 10 of 10 (100%): '
            "lower beyond chance (one-sided Fisher exact p = 0.0015 < alpha 0.05)",
        ),
        statuses={"decay": "passed"},
        regressions=("decayed",),
        slow=True,
    ),
    Case(
        id="repeats-noise",
        check="a pass rate falling from 10 of 10 to 9 of 10 is noise",
        fixture="repeats",
        args=(*TIER, "-e", "noise"),
        exit=0,
        lines=("evalrun t1: passed (exit 0)",),
        statuses={"noise": "passed"},
        regressions=(),
        stale=(),
        extra=_says_nothing_of_the_baseline,
        slow=True,
    ),
)


# -- running --------------------------------------------------------------------


def run_case(zygote: Zygote, case: Case, workdir: Path) -> Outcome:
    """Copy the case's fixture into a fresh folder and run evalrun in it."""
    folder = workdir / case.id
    shutil.copytree(
        FIXTURES / case.fixture,
        folder,
        ignore=shutil.ignore_patterns("__pycache__", ".evalrun", "results.json", "grandchild.pid*"),
    )
    code, stdout, stderr = run_evalrun(zygote, case.args, folder, workdir / f"{case.id}.out", workdir / f"{case.id}.err")
    results, problem = _read_results(folder / case.results_file)
    return Outcome(folder=folder, exit_code=code, stdout=stdout, stderr=stderr, results=results, results_problem=problem)


# -- evalrun in a process of its own ----------------------------------------------
#
# Each invocation is a ``python -m evalrun`` of its own: its own process and
# session, folder, environment, stdin, stdout and stderr. The processes are
# forked from one that imported evalrun once (evals/lib/evalrun_forks.py says
# how a child is made to match a fresh one), so a case costs what evalrun does,
# not what importing it does.


def case_environment() -> dict[str, str]:
    """evalrun's own variables belong to the outer run; the switches to this scorer."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_") and k not in (BREAK_VAR, CASES_VAR)}
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


def _read_results(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except FileNotFoundError:
        return None, None
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"{path.name} is not JSON: {exc}"


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs; a zombie that nobody reaps has stopped running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no procfs: trust kill()
    return stat.rpartition(")")[2].split()[0] != "Z"


# -- judging --------------------------------------------------------------------


def assert_case(c: scorer.Check, case: Case, outcome: Outcome) -> None:
    """The assertions of one check, cheapest-to-read first: exit code, output, results file."""
    c.evidence(f"evalrun {' '.join(case.args)} in {outcome.folder}\n{_tail(outcome.output)}")
    c.is_not_none(outcome.exit_code, f"evalrun finished within {RUN_LIMIT_S:g} s")
    c.equal(outcome.exit_code, case.exit, "exit code")
    c.not_contains(outcome.output, "Traceback", "no Python traceback reaches the user")
    for text in case.texts:
        c.contains(outcome.output, text, "output")
    output_lines = outcome.output.splitlines()
    for line in case.lines:
        c.contains(output_lines, line, "output line")
    c.is_none(outcome.results_problem, "the results file is readable")
    if case.statuses is None:
        c.is_none(outcome.results, "no results file is written when nothing could run")
    else:
        results = c.is_not_none(outcome.results, f"a results file at {case.results_file} with {dict(case.statuses)}")
        statuses = {e["name"]: e["status"] for e in results["evals"]}
        c.equal(statuses, dict(case.statuses), "eval statuses in the results file")
        if case.args[0] == "t1":
            c.equal(results["exit_code"], case.exit, "exit code recorded in the results file")
            comparison = results.get("baseline") or {}
            kinds = [r["kind"] for r in comparison.get("regressions", [])]
            c.equal(kinds, list(case.regressions), "baseline regressions in the results file")
            if case.stale is not None:
                stale = [s["kind"] for s in comparison.get("stale", [])]
                c.equal(stale, list(case.stale), "stale baseline changes in the results file")
    if case.extra is not None:
        case.extra(c, outcome)


def _tail(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else "..." + text[-limit:]


def select_cases(cases: tuple[Case, ...], setting: str) -> tuple[Case, ...]:
    """Apply ``GATE_BITES_CASES``: only the named cases, still in report order."""
    if not setting:
        return cases
    wanted = [name.strip() for name in setting.split(",")]
    ids = {case.id for case in cases}
    unknown = [name for name in wanted if name not in ids]
    if unknown:
        raise SystemExit(f"{CASES_VAR}={setting!r}: unknown case {unknown[0]!r}; use IDs from {', '.join(sorted(ids))}")
    return tuple(case for case in cases if case.id in wanted)


def break_expectations(cases: tuple[Case, ...], setting: str) -> tuple[Case, ...]:
    """Apply ``GATE_BITES_BREAK``: make chosen expectations wrong on purpose."""
    if not setting:
        return cases
    mode, _, only = setting.partition(":")
    ids = {case.id for case in cases}
    if mode not in BREAK_MODES or (only and only not in ids):
        raise SystemExit(
            f"{BREAK_VAR}={setting!r}: use MODE[:CASE], MODE one of {', '.join(BREAK_MODES)}, "
            f"CASE one of {', '.join(sorted(ids))}"
        )
    return tuple(_broken(case, mode) if not only or case.id == only else case for case in cases)


def _broken(case: Case, mode: str) -> Case:
    marker = " [broken on purpose]"
    if mode == "exit":
        return replace(case, exit=case.exit + 100)
    if mode == "text":
        return replace(
            case,
            texts=tuple(t + marker for t in case.texts),
            lines=tuple(line + marker for line in case.lines),
        )
    statuses = {name: "broken-on-purpose" for name in case.statuses or {}} or {"broken-on-purpose": "passed"}
    return replace(case, statuses=statuses)


def main() -> None:
    cases = break_expectations(select_cases(CASES, os.environ.get(CASES_VAR, "")), os.environ.get(BREAK_VAR, ""))
    workdir = Path(os.environ.get("EVALRUN_WORKDIR") or tempfile.mkdtemp(prefix="gate-bites-"))
    started = time.monotonic()
    with Zygote(case_environment()) as zygote, ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {case.id: pool.submit(run_case, zygote, case, workdir) for case in sorted(cases, key=lambda k: not k.slow)}
        for case in cases:  # report order, whatever order they finish in
            with scorer.check(case.check) as c:
                assert_case(c, case, futures[case.id].result())
    scorer.metric("cases", len(cases))
    scorer.metric("wall_s", round(time.monotonic() - started, 2))
    scorer.finish()


if __name__ == "__main__":
    main()
