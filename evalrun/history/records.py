"""What the history keeps of one run: plain stored rows built from a results file.

This module owns the shape of a stored run (``StoredRun``) and how one is made
from ``RunResults`` plus what git says about the working tree. Every text a
scorer controls is redacted, then cut to a bound, before it is stored.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from evalrun.secrets import scrub
from evalrun.results import RunResults, Status, _Record

MESSAGE_CHARS = 2_000  # a message is one explaining line; keep more than enough of it
EVIDENCE_CHARS = 4_000  # evidence can be a whole state dump; the results file keeps the rest
MAX_METRICS = 100  # per eval
RUN_TEXT_CHARS = 2_000_000  # check messages and evidence kept of one run; past it, a short message and no evidence
_SPENT_CHARS = 160  # a check's message once the run's text is spent
_SPENT_NOTE = " (cut: the results file has it all)"  # with it, at most 200 characters a check
GIT_TIMEOUT = 5.0  # seconds per git call: history must never hold up a run


# Plain records, not pydantic models: a report reads 30,000 checks back at once, and they are only ever built
# here and in evalrun.history.sql from data evalrun itself wrote. A check is a NamedTuple (read-only, as small as
# a slotted class); an eval and a run are slotted dataclasses, with the equality and repr of the results' records
# (``evalrun.results._Record``: the same as a dataclass makes, not compiled again per class at every start).
class StoredCheck(NamedTuple):
    eval: str
    name: str
    assertions: int
    passed: bool
    runs: int | None = None  # for repeated runs of a check, once repeats exist
    passes: int | None = None
    message: str | None = None
    evidence: str | None = None
    judge: str | None = None  # who judged it, when a model did (model#hash)


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class StoredEval(_Record):
    name: str  # eval[experiment] under an experiment
    status: str
    experiment: str | None = None
    duration_s: float = 0.0
    exit_code: int | None = None
    message: str | None = None
    models: dict[str, Any] | None = None
    tokens: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    checks: list[StoredCheck] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return Status(self.status).is_failure

    @property
    def unchecked(self) -> bool:
        return Status(self.status).is_unchecked


@dataclass(slots=True, kw_only=True, repr=False, eq=False)
class StoredRun(_Record):
    run_id: str
    tier: str
    started_at: str
    finished_at: str | None = None
    recorded_at: str
    source: str  # run, shard, merge, baseline, import
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    evalrun_version: str
    exit_code: int | None = None
    interrupted: bool = False
    baseline: dict[str, Any] = field(default_factory=dict)  # regressions, stale, not_compared: lines
    evals: list[StoredEval] = field(default_factory=list)
    # Whether the run phase was isolated from the network, and how (the results' ``network``: isolated, mechanism,
    # reason); None for t3, and for runs stored before evalrun recorded it.
    network: dict[str, Any] | None = None

    def counts(self) -> dict[str, int]:
        return {
            "passed": sum(1 for e in self.evals if e.status == Status.PASSED.value),
            "failed": sum(1 for e in self.evals if e.failed),
            "skipped": sum(1 for e in self.evals if e.unchecked),
        }

    @property
    def filters(self) -> list[str]:
        """What narrowed this run to part of its tier (``--eval a``); empty for a whole run."""
        found = self.baseline.get("filters") if isinstance(self.baseline, dict) else None
        return [str(f) for f in found] if isinstance(found, list) else []

    @property
    def short_commit(self) -> str:
        if not self.git_commit:
            return "-"
        return self.git_commit[:10] + ("+" if self.git_dirty else "")


class GitInfo(NamedTuple):
    commit: str | None = None
    branch: str | None = None
    dirty: bool | None = None


_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1, or SHA-256 in a repository made with it


def read_git(folder: Path) -> GitInfo:
    """HEAD's commit, branch and whether tracked files changed; empty outside a repository or without git."""
    if shutil.which("git") is None:
        return GitInfo()
    # One git for both: HEAD's commit, then its branch ("HEAD" when detached); exit 128 before the first commit.
    head = _git(folder, ["rev-parse", "HEAD", "--abbrev-ref", "HEAD"])
    commit, _, branch = (head or "").partition("\n")
    if not _COMMIT.fullmatch(commit):
        return GitInfo()
    branch = branch.strip() or None
    # diff --quiet prints nothing (a bounded read) and exits 1 when tracked files changed.
    dirty = _git_status(folder, ["diff", "--quiet", "HEAD", "--"])
    return GitInfo(commit, None if branch in (None, "HEAD") else branch, None if dirty is None else dirty == 1)


def _git(folder: Path, args: list[str]) -> str | None:
    proc = _run_git(folder, args)
    if proc is None or proc.returncode != 0:
        return None
    text = proc.stdout[:512].decode("utf-8", "replace").strip()
    return text or None


def _git_status(folder: Path, args: list[str]) -> int | None:
    proc = _run_git(folder, args)
    return None if proc is None or proc.returncode not in (0, 1) else proc.returncode


def _run_git(folder: Path, args: list[str]) -> subprocess.CompletedProcess[bytes] | None:
    from evalrun.errors import UsageError
    from evalrun.git import run_git  # the one way evalrun runs git

    try:
        return run_git(folder, args, "history")
    except UsageError:  # no git, no folder, a hung git: the run is recorded without a commit
        return None


def make_record(
    results: RunResults,
    git: GitInfo,
    source: str,
    secrets: Iterable[str] = (),
    recorded_at: str | None = None,
    *,
    with_evals: bool = True,
) -> StoredRun:
    """The stored form of a results file; scorer text redacted, then bounded.

    ``with_evals=False`` leaves ``evals`` empty: the run's own row only, for a
    writer that streams ``eval_records`` one eval at a time (``record_run``), so
    that a million checks never sit in memory as records at once.
    """
    hidden = [s for s in secrets if s]
    clean = _cleaner(hidden)
    if source == "run" and results.selection.get("shard"):
        source = "shard"  # one part of a run: the merged run stands for it in trends
    comparison = results.baseline
    baseline: dict[str, Any] = {}
    if comparison is not None:
        baseline = {
            "regressions": [clean(c.message, MESSAGE_CHARS) for c in comparison.regressions],
            "stale": [clean(c.message, MESSAGE_CHARS) for c in comparison.stale],
            "undecided": [clean(c.message, MESSAGE_CHARS) for c in comparison.undecided],
            "not_compared": list(comparison.not_compared),
        }
    filters = run_filters(results.selection)
    if filters:  # kept with the baseline lines (one JSON column): a filtered run is not the whole tier
        baseline["filters"] = filters
    return StoredRun(
        run_id=run_id_for(results),
        tier=results.tier,
        started_at=results.started_at,
        finished_at=results.finished_at,
        recorded_at=recorded_at or datetime.now(timezone.utc).isoformat(timespec="seconds"),
        source=source,
        git_commit=git.commit,
        git_branch=git.branch,
        git_dirty=git.dirty,
        evalrun_version=results.evalrun_version,
        exit_code=results.exit_code,
        interrupted=results.interrupted,
        baseline=baseline,
        evals=list(eval_records(results, hidden)) if with_evals else [],
        network=_network(results, clean),
    )


def _network(results: RunResults, clean: Callable[[str | None, int], str | None]) -> dict[str, Any] | None:
    if results.network is None:
        return None
    network = asdict(results.network)
    network["reason"] = clean(network["reason"], MESSAGE_CHARS) if network["reason"] else None
    return network


_FILTER_FLAGS = {"evals": "--eval", "tags": "--tag", "experiments": "--experiment",
                 "changed_since": "--changed-since", "last_failed": "--last-failed"}


def run_filters(selection: Mapping[str, Any]) -> list[str]:
    """``["--eval a", "--tag b"]``: what narrowed a run to part of its tier (shards are recorded apart)."""
    out = []
    for key, flag in _FILTER_FLAGS.items():
        values = selection.get(key) or []
        if isinstance(values, list):
            out += [flag if key == "last_failed" else f"{flag} {v}" for v in values[: 1 if key == "last_failed" else None]]
    return out


def eval_records(results: RunResults, secrets: Iterable[str] = ()) -> Iterator[StoredEval]:
    """The stored form of each eval of ``results``, with its checks, one eval at a time."""
    clean = _cleaner([s for s in secrets if s])
    budget = [RUN_TEXT_CHARS]  # shared by every eval of the run

    def check_record(result_name: str, c: Any) -> StoredCheck:
        message, evidence = c.message, c.evidence
        if budget[0] > 0:
            message, evidence = clean(message, MESSAGE_CHARS), clean(evidence, EVIDENCE_CHARS)
            budget[0] -= len(message or "") + len(evidence or "")
        else:
            message = (clean(message, _SPENT_CHARS) or "") + _SPENT_NOTE if message or evidence else None
            evidence = None
        return StoredCheck(eval=result_name, name=c.name, assertions=c.assertions, passed=c.passed,
                           runs=c.rate.runs if c.rate is not None else None,  # a repeated eval: its outcomes
                           passes=c.rate.passes if c.rate is not None else None,
                           message=message, evidence=evidence, judge=c.judge)

    for result in results.evals:
        models = result.models or None
        tokens = None
        if models:
            total = (models.get("tokens") or {}).get("total") if isinstance(models.get("tokens"), dict) else None
            tokens = int(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None
        metrics = dict(list(result.metrics.items())[:MAX_METRICS])
        yield StoredEval(
            name=result.name,
            experiment=result.experiment,
            status=result.status.value,
            duration_s=result.duration_s,
            exit_code=result.exit_code,
            message=clean(result.message, MESSAGE_CHARS),
            models=models,
            tokens=tokens,
            metrics=metrics,
            checks=[check_record(result.name, c) for c in result.checks],
        )


def _cleaner(hidden: list[str]) -> Callable[[str | None, int], str | None]:
    def clean(text: str | None, limit: int) -> str | None:
        if text is None:
            return None
        text = scrub(text, hidden)
        return text if len(text) <= limit else text[: limit - 1] + "…"

    return clean


def run_id_for(results: RunResults) -> str:
    """``20261201T025030-t1-3f9a2c1b``: the id the run wrote into its results file (``RunResults.run_id``).

    A file of an older evalrun has none: its id is then derived from its content (its start to the second, its
    tier and a hash of the file's JSON). Either way ``history import`` of a file the history already holds is a
    no-op rather than a duplicate, and two runs made by this evalrun are two runs, whatever their results.
    """
    from evalrun.results import results_json_pieces, run_stamp

    if results.run_id:
        return results.run_id
    hasher = hashlib.sha256()
    for piece in results_json_pieces(results):  # a piece at a time: a million checks never make one string
        hasher.update(piece.encode("utf-8"))
    digest = hasher.hexdigest()[:8]
    return f"{run_stamp(results.started_at)}-{results.tier}-{digest}"
