"""Bites: each guarded check shown to go red when what it guards is broken.

An eval declares bites in the manifest (``[[evals.bites]]``): a named
breakage of the code or data it guards (a patch, an environment variable, a
file replaced by another) and the checks that must fail under it.
``evalrun bites TIER`` runs each bite on a clean copy of the checkout, in
the tier's own mode, and judges it:

- caught: the eval's report came in and every named check failed;
- not caught: a named check passed under the breakage: it cannot fail this
  way, it asserts nothing about what it guards (exit 3, regression class);
- broken: the bite did not apply or changed nothing, the eval did not report
  (crash, timeout, a service down), a named check is not in its report, or
  it failed before making any assertion: that proves nothing either way
  (exit 1, a failure);
- skipped: a precondition of the eval was unmet (exit 4, as any skip).

This module holds the pure parts: the list of bites of a plan, the shard
split, applying a bite to an export, and turning an eval's result under the
bite into the bite's own result. ``evalrun.bites.run`` runs them.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import ExitCode, UsageError
from evalrun.manifest import Bite
from evalrun.plan import PlannedEval
from evalrun.results import (  # a bite's verdict is its result's: reports_out reads it from the record
    BROKEN, CAUGHT, INTERRUPTED, NOT_CAUGHT, SKIPPED, CheckResult, EvalResult, Status, outcome_of,
)
from evalrun.git import git_says, run_git
from evalrun.text import one_line, plural

_STATUS = {CAUGHT: Status.PASSED, NOT_CAUGHT: Status.FAILED, BROKEN: Status.ERROR, SKIPPED: Status.SKIPPED,
           INTERRUPTED: Status.INTERRUPTED}


@dataclass(frozen=True)
class BiteRun:
    """One bite of one planned eval (one cell: a bite runs under each experiment of its eval)."""

    planned: PlannedEval
    bite: Bite

    @property
    def name(self) -> str:
        return bite_result_name(self.planned.name, self.bite.name)


def bite_result_name(cell: str, bite: str) -> str:
    """The name a bite's result goes by in results, JUnit, Markdown and HTML."""
    return f"{cell}: bite {bite}"


def plan_bites(planned: Sequence[PlannedEval]) -> list[BiteRun]:
    """Every bite of every planned cell, in plan order then manifest order."""
    return [BiteRun(p, bite) for p in planned if p.repeat == 0 for bite in p.spec.bites]


def select_bite_shard(runs: Sequence[BiteRun], shard: tuple[int, int]) -> list[BiteRun]:
    """Shard ``index`` of ``total`` (1-based): every ``total``-th bite of the sorted list, so shards cover it once."""
    index, total = shard
    ordered = sorted(runs, key=lambda r: r.name)
    return [r for k, r in enumerate(ordered) if k % total == index - 1]


def bite_shard_split(runs: Sequence[BiteRun], total: int) -> str:
    """The fingerprint of the whole split of ``runs`` into ``total`` shards, as run shards record theirs."""
    from evalrun.selection.shards import split_fingerprint

    return split_fingerprint([[r.name for r in select_bite_shard(runs, (index, total))] for index in range(1, total + 1)])


def describe_bite(bite: Bite) -> str:
    """What the bite breaks, in a few words: ``patch bites/x.patch; env X; schema.sql replaced by y.sql``."""
    parts = [f"patch {bite.patch}"] if bite.patch else []
    parts += [f"env {name}" for name in bite.env]
    parts += [f"{target} replaced by {source}" for target, source in bite.replace.items()]
    return "; ".join(parts)


class BiteNotApplied(Exception):
    """The bite could not be laid on the clean copy: its result is "broken"."""


def apply_bite(bite: Bite, eval_dir: Path, top: Path) -> None:
    """Lay ``bite`` on the export whose top folder is ``top``; ``eval_dir`` is the eval's folder in it.

    ``env`` is not applied here: it goes into the eval's environment. A bite must change what it says it
    changes: a replaced file that ends up as it was, or a patch after which the files it names read as
    before (``git apply`` that found another repository above the export and applied nothing, exit 0), is
    ``BiteNotApplied`` ("broken"), never a run that proves nothing.
    """
    for target, source in bite.replace.items():
        src, dst = (eval_dir / source).resolve(), (eval_dir / target).resolve()
        if not src.is_relative_to(top) or not dst.is_relative_to(top):
            raise BiteNotApplied(f"replace {target}: lies outside the checkout")
        if not src.is_file():
            raise BiteNotApplied(f"replace {target}: {source} is not committed, so the clean copy has no such file")
        if dst.is_dir():
            raise BiteNotApplied(f"replace {target}: is a folder in the clean copy; a bite replaces one file, name a file in it")
        before = _contents(dst)
        try:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        except OSError as exc:
            raise BiteNotApplied(f"replace {target}: cannot write it in the clean copy ({exc.strerror or exc})") from None
        if _contents(dst) == before:
            raise BiteNotApplied(f"replace {target}: {source} has the same content, so the bite changes nothing; "
                                 "replace it by a file that differs")
    if bite.patch:
        _apply_patch(bite.patch, (eval_dir / bite.patch).resolve(), top)


def _apply_patch(named: str, patch: Path, top: Path) -> None:
    """``git apply`` the patch to the export at ``top`` alone, then check that every file it names changed."""
    if not patch.is_file():
        raise BiteNotApplied(f"patch {named}: not committed, so the clean copy has no such file")
    # The export is no repository: git must not find one above it (a TMPDIR inside a CI's work tree), where
    # ``git apply`` would skip the paths outside that repository's current folder and exit 0 having done nothing.
    isolated = {"GIT_CEILING_DIRECTORIES": str(top.parent)}
    try:
        listed = run_git(top, ["apply", "--numstat", "-z", str(patch)], "bites", env=isolated)
        paths = _numstat_paths(listed.stdout) if listed.returncode == 0 else []
        before = {rel: _contents(top / rel) for rel in paths}
        proc = run_git(top, ["apply", "--whitespace=nowarn", str(patch)], "bites", env=isolated)
    except UsageError as exc:
        raise BiteNotApplied(f"patch {named}: {exc}") from None
    if proc.returncode != 0:
        raise BiteNotApplied(f"patch {named} does not apply ({one_line(git_says(proc), 300)}); regenerate it with git diff")
    if not paths or all(_contents(top / rel) == old for rel, old in before.items()):
        raise BiteNotApplied(f"patch {named}: git apply exited 0 but changed no file of the clean copy; "
                             "regenerate it with git diff from the repository's top folder")


def _numstat_paths(raw: bytes) -> list[str]:
    """The paths ``git apply --numstat -z`` names (a rename's both sides)."""
    paths: list[str] = []
    parts = raw.decode("utf-8", "surrogateescape").split("\0")
    index = 0
    while index < len(parts):
        fields = parts[index].split("\t")
        index += 1
        if len(fields) == 3 and fields[2]:
            paths.append(fields[2])
        elif len(fields) == 3:  # a rename: the old and the new path follow as two more fields
            paths += [p for p in parts[index:index + 2] if p]
            index += 2
    return paths


def _contents(path: Path) -> bytes | None:
    """A file's bytes, or None when there is no file (a patch may add or delete one)."""
    try:
        return path.read_bytes() if path.is_file() else None
    except OSError:
        return None


def judge_bite(run: BiteRun, result: EvalResult | None, problem: str | None = None) -> EvalResult:
    """The bite's own result from the eval's result under the bite (``problem``: why there is none)."""
    bite = run.bite
    base = {"name": run.name, "tier": run.planned.spec.tier, "dir": run.planned.spec.dir,
            "experiment": run.planned.experiment}
    fails = list(dict.fromkeys(bite.fails))

    def done(outcome: str, message: str, checks: list[CheckResult] | None = None,
             source: EvalResult | None = None) -> EvalResult:
        metrics = {"bite": bite.name, "eval": run.planned.name, "outcome": outcome, "breaks": describe_bite(bite)}
        return EvalResult(
            **base, status=_STATUS[outcome], message=f"{outcome}: {message}", checks=checks or [], metrics=metrics,
            duration_s=source.duration_s if source else 0.0, exit_code=source.exit_code if source else None,
            output_tail=source.output_tail if source and outcome == BROKEN else "", models=source.models if source else None,
        )

    if result is None:
        return done(BROKEN, f"the bite did not apply: {problem}")
    if result.status is Status.INTERRUPTED:
        return done(INTERRUPTED, "the run was interrupted", source=result)
    if result.status in (Status.SKIPPED, Status.BUDGET):
        return done(SKIPPED, f"the eval did not run under the bite ({result.message or result.status.value})", source=result)
    if result.status not in (Status.PASSED, Status.FAILED) or (result.exit_code is None and not result.checks):
        why = one_line(result.message or result.status.value, 300)
        return done(BROKEN, f"the eval {result.status.value} under the bite ({why}); that is not a named check failing",
                    source=result)
    by_name = {c.name: c for c in result.checks}
    missing = [name for name in fails if name not in by_name]
    if missing:
        return done(BROKEN, f"check {_q(missing[0])} is not in the eval's report under the bite; fix the name in fails",
                    source=result)
    unasserted = [name for name in fails if not by_name[name].passed and by_name[name].assertions == 0]
    if unasserted:
        return done(BROKEN, f"check {_q(unasserted[0])} failed under the bite before making any assertion "
                            f"({one_line(by_name[unasserted[0]].message or 'no message', 200)}): it never tested what "
                            "the bite breaks; make the bite break the product, not the check (e.g. a well-formed "
                            "replacement file)", source=result)
    checks = [
        CheckResult(
            name=name,
            assertions=by_name[name].assertions,
            passed=not by_name[name].passed,
            message=(f"failed under the bite, as it must: {one_line(by_name[name].message or 'failed', 300)}"
                     if not by_name[name].passed else
                     "passed under the bite: this check cannot fail this way; it asserts nothing about what it guards"),
        )
        for name in fails
    ]
    passed = [c.name for c in checks if not c.passed]
    if passed:
        listed = ", ".join(_q(n) for n in passed)
        return done(NOT_CAUGHT, f"{listed} passed with {describe_bite(bite)}", checks, result)
    return done(CAUGHT, f"{plural(len(checks), 'named check')} failed with {describe_bite(bite)}",
                checks, result)


def bites_exit_code(results: Sequence[EvalResult], interrupted: bool) -> ExitCode:
    """Interrupted 130; a broken bite 1 (it proves nothing); a bite not caught 3; a skipped one 4; none 5."""
    outcomes = {outcome_of(r) for r in results}
    if interrupted or INTERRUPTED in outcomes:
        return ExitCode.INTERRUPTED
    if BROKEN in outcomes:
        return ExitCode.FAILED
    if NOT_CAUGHT in outcomes:
        return ExitCode.REGRESSED
    if SKIPPED in outcomes:
        return ExitCode.UNCHECKED
    if not results:
        return ExitCode.NOTHING_SELECTED
    return ExitCode.OK


def _q(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)
