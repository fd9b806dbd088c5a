"""The results of one invocation: per-eval records, versioned, written atomically.

This module owns the data that flows out of ``execute`` and into the baseline
comparison, the verdict and every reporter. It is plain data (pydantic), so a
results file written by one run can be read back by ``baseline --from-results``,
``baseline diff`` and ``merge``.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrun.atomic import write_atomic
from evalrun.errors import ResultsError

RESULTS_VERSION = 2  # 2: repeats and pass rates (``rate`` on checks, ``repeats`` on evals)
_READABLE_VERSIONS = (1, 2)  # version 1 files lack only the optional repeat fields


class Status(str, Enum):
    """What became of one eval. Only ``passed`` is a pass; a skip never is."""

    PASSED = "passed"
    FAILED = "failed"  # a check failed, or a runner rule failed the eval
    ERROR = "error"  # the scorer crashed, was not found, or wrote an unusable report
    TIMEOUT = "timeout"
    SKIPPED = "skipped"  # a precondition was unmet: not checked
    INTERRUPTED = "interrupted"  # Ctrl-C arrived before it finished
    BUDGET = "budget"  # not checked: the model budget was exhausted

    @property
    def is_failure(self) -> bool:
        return self in (Status.FAILED, Status.ERROR, Status.TIMEOUT)

    @property
    def is_unchecked(self) -> bool:
        return self in (Status.SKIPPED, Status.INTERRUPTED, Status.BUDGET)


class CheckResult(BaseModel):
    """One check of a scorer's report, after the runner's rules were applied."""

    model_config = ConfigDict(extra="forbid")

    name: str
    assertions: int
    passed: bool
    message: str | None = None
    evidence: str | None = None
    rate: CheckRate | None = None  # only for an eval that repeats: runs, passes and their statistics


class CheckRate(BaseModel):
    """A check's pass rate over an eval's repeats (``evalrun.repeats``; statistics from ``evalrun.stats``)."""

    model_config = ConfigDict(extra="forbid")

    runs: int  # the eval's runs that produced a report; a run where the check is absent counts as not passed
    passes: int
    seen: int  # runs whose report held this check; < runs: it vanished in some runs
    pass_at_k: dict[str, float] = Field(default_factory=dict)  # k -> unbiased pass@k
    pass_hat_k: dict[str, float] = Field(default_factory=dict)  # k -> unbiased pass^k
    wilson_95: tuple[float, float] = (0.0, 1.0)  # 95% Wilson score interval of passes/runs
    flaky: bool = False  # at or above the floor, but not passed in every run
    failed_runs: list[int] = Field(default_factory=list)  # EVALRUN_REPEAT of the runs it did not pass


class RunRecord(BaseModel):
    """One repeat of an eval: its index (``EVALRUN_REPEAT``) and what became of it."""

    model_config = ConfigDict(extra="forbid")

    repeat: int
    status: Status
    duration_s: float = 0.0
    exit_code: int | None = None
    message: str | None = None


class RepeatSummary(BaseModel):
    """How an eval's repeats went: how many were planned and made, the floor, and what was flaky."""

    model_config = ConfigDict(extra="forbid")

    planned: int
    runs: int  # runs made that produced a report (the denominator of every rate)
    floor: float
    alpha: float
    stop: str | None = None  # "decided": early stop was on
    stopped_early: bool = False  # rates come from fewer runs than planned: the verdict was decided
    partial: bool = False  # interrupted or stopped by the budget: rates of the finished runs only
    flaky: list[str] = Field(default_factory=list)
    below_floor: list[str] = Field(default_factory=list)
    runs_detail: list[RunRecord] = Field(default_factory=list)


class EvalResult(BaseModel):
    """The record of one planned eval."""

    model_config = ConfigDict(extra="forbid")

    name: str
    tier: str
    dir: str
    status: Status
    message: str | None = None  # the explaining message: why it failed, skipped, ...
    checks: list[CheckResult] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = 0.0
    exit_code: int | None = None
    output_tail: str = ""
    models: dict[str, Any] | None = None  # provider, models that answered, calls, tokens
    repeats: RepeatSummary | None = None  # only for an eval that repeats (repeat > 1)

    def check_counts(self) -> dict[str, int]:
        return {c.name: c.assertions for c in self.checks}


class BaselineChange(BaseModel):
    """One line of a baseline comparison."""

    model_config = ConfigDict(extra="forbid")

    eval: str
    check: str | None = None  # None: the change concerns the whole eval
    kind: str  # vanished-check, weakened, vanished-eval, new-check, new-eval, stronger; decayed, improved, new-rate (pass rates)
    baseline: int | None = None
    current: int | None = None
    message: str
    # kinds decayed and improved (pass rates of a repeated eval): passes/runs before and now, and the p-value
    baseline_rate: tuple[int, int] | None = None
    current_rate: tuple[int, int] | None = None
    p_value: float | None = None


class BaselineComparison(BaseModel):
    """What the baseline comparison found, recorded in the results file."""

    model_config = ConfigDict(extra="forbid")

    path: str
    exists: bool
    regressions: list[BaselineChange] = Field(default_factory=list)
    stale: list[BaselineChange] = Field(default_factory=list)
    not_compared: list[str] = Field(default_factory=list)
    strict: bool = False
    update_command: str = ""


class RunResults(BaseModel):
    """A results file: one invocation of one tier (or one merge of shards)."""

    model_config = ConfigDict(extra="forbid")

    version: int = RESULTS_VERSION
    evalrun_version: str
    tier: str
    manifest: str
    started_at: str
    finished_at: str | None = None
    interrupted: bool = False
    selection: dict[str, Any] = Field(default_factory=dict)  # filters: evals, tags, shard, ...
    evals: list[EvalResult] = Field(default_factory=list)
    baseline: BaselineComparison | None = None
    exit_code: int | None = None


def write_results(results: RunResults, path: Path) -> None:
    """Write the results file atomically: a killed run never leaves it torn."""
    write_atomic(path, results.model_dump_json(indent=2) + "\n")


def load_results(path: Path) -> RunResults:
    """Read a results file, with one-line errors naming the file."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such results file; run the tier first or pass --json PATH") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    if isinstance(data, dict) and data.get("version") not in _READABLE_VERSIONS:
        raise ResultsError(
            f"{path}: results version {data.get('version')!r} is not {RESULTS_VERSION}; rerun the tier with this evalrun"
        )
    try:
        return RunResults.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ResultsError(f"{path}: {where}: {err['msg']}; rerun the tier to rewrite it") from None


def results_schema() -> dict[str, Any]:
    return RunResults.model_json_schema()
