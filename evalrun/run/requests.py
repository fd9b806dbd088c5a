"""What a run is asked for (``RunRequest``, built by the CLI), what collecting takes of it, and where it writes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple


class RunRequest(NamedTuple):
    """What a run command asks for: the tier, the filters, and where outputs go."""

    manifest_path: Path
    tier: str
    evals: Sequence[str] = ()
    tags: Sequence[str] = ()
    jobs: int = 0
    json_path: Path | None = None
    strict_baseline: bool = False
    no_skips: bool = False
    junit_path: Path | None = None
    markdown_path: Path | None = None
    changed_since: str | None = None
    shard: str | None = None
    clean_checkout: bool = False
    worktree: bool = False
    record: bool = False  # t3: write the model answers as replay fixtures
    html_path: Path | None = None  # also the HTML report: this run and the history's last runs
    repeat: int | None = None  # --repeat N: every planned eval runs N times (evalrun.repeats)
    experiments: Sequence[str] = ()  # --experiment NAME: only these columns
    verbose: bool = False  # -v: the output tail of every failing eval after the summary
    last_failed: bool = False  # --last-failed: only what failed, errored or regressed in the tier's last run


class CollectOptions(NamedTuple):
    """What collecting a plan takes of the request: how many at once, how often, what is recorded, what a skip is."""

    jobs: int = 0  # 0: one per CPU
    repeat: int | None = None  # --repeat N
    record: bool = False  # t3 --record
    no_skips: bool = False  # --no-skips: a skip is a failure

    @classmethod
    def of(cls, request: RunRequest) -> CollectOptions:
        return cls(jobs=request.jobs, repeat=request.repeat, record=request.record, no_skips=request.no_skips)


class Outputs(NamedTuple):
    """Where a run writes: the results file, and the reports asked for."""

    results: Path
    junit: Path | None = None
    markdown: Path | None = None
    html: Path | None = None
