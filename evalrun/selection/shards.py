"""Splitting a plan across machines: ``--shard I/N``.

Sharding is a pure function of the plan and the durations of the last whole
run, so every machine computes the same split; what a shard leaves out joins
``filtered_out``, and a fingerprint of the split lets ``evalrun merge`` tell
"split differently" from "a shard is missing".
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.errors import UsageError
from evalrun.plan import Plan
from evalrun.results import load_results


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    total: int
    origin: str | None = field(default=None, compare=False)  # --shard auto: the variables it was read from

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


AUTO = "auto"


@dataclass(frozen=True)
class ShardVariables:
    """Where a CI says which parallel job this is: an index and a total variable, and the index's base."""

    ci: str
    index: str
    total: str
    base: int  # 0 or 1: what the first job's index is


# The variables ``--shard auto`` reads, in the order it names them. GitHub has none of its own: a matrix
# job passes ``strategy.job-index`` and ``strategy.job-total`` (0-based) as EVALRUN_SHARD_INDEX/_TOTAL.
SHARD_VARIABLES = (
    ShardVariables("GitHub matrix", "EVALRUN_SHARD_INDEX",
                   "EVALRUN_SHARD_TOTAL", 0),
    ShardVariables("GitLab", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1),
    ShardVariables("CircleCI", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0),
    ShardVariables("Buildkite", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0),
)
EXPLICIT_VAR = "EVALRUN_SHARD"  # I/N, 1-based, as --shard takes it


def parse_shard(text: str, environ: Mapping[str, str] | None = None) -> Shard:
    """``"2/3"`` -> Shard(2, 3); 1-based, so the shards of 3 are 1/3, 2/3 and 3/3. ``"auto"``: from the CI's variables."""
    if text.strip() == AUTO:
        return auto_shard(environ or {})
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None:
        raise UsageError(f"--shard {text}: expected I/N, this machine's shard and the number of shards, e.g. 2/3")
    index, total = int(match.group(1)), int(match.group(2))
    if total < 1:
        raise UsageError(f"--shard {text}: the number of shards must be at least 1, e.g. 1/1")
    if not 1 <= index <= total:
        raise UsageError(f"--shard {text}: shards count from 1; use 1/{total} to {total}/{total}")
    return Shard(index, total)


def auto_shard(environ: Mapping[str, str]) -> Shard:
    """The shard the CI's variables name (``--shard auto``); UsageError, one line, when none is set or they disagree."""
    found: list[tuple[Shard, str]] = []
    explicit = environ.get(EXPLICIT_VAR, "").strip()
    if explicit:
        try:
            shard = parse_shard(explicit)
        except UsageError as exc:
            raise UsageError(f"--shard auto: {EXPLICIT_VAR}={explicit[:40]!r}: " + str(exc).split(": ", 1)[-1]) from None
        found.append((shard, f"{EXPLICIT_VAR}={shard}"))
    for v in SHARD_VARIABLES:
        index, total = environ.get(v.index, "").strip(), environ.get(v.total, "").strip()
        if not index and (not total or total == "1"):
            continue  # not this CI, or a job without parallelism (GitLab sets CI_NODE_TOTAL=1 on every job)
        if not index or not total:
            missing = v.index if not index else v.total
            raise UsageError(f"--shard auto: {v.total if not index else v.index} is set but {missing} is not "
                             f"({v.ci}); set both, or pass --shard I/N")
        if not (index.isdigit() and total.isdigit()):
            raise UsageError(f"--shard auto: {v.index}={index[:20]!r}, {v.total}={total[:20]!r} ({v.ci}): "
                             f"expected whole numbers")
        first = v.base
        number, count = int(index), int(total)
        if count < 1 or not first <= number < first + count:
            raise UsageError(f"--shard auto: {v.index}={number} is out of range for {v.total}={count} ({v.ci} counts "
                             f"from {first}: {first} to {first + count - 1})")
        converted = f"{v.index}={number}, {v.total}={count}" + (f", {first}-based" if first == 0 else "")
        found.append((Shard(number - first + 1, count), f"{v.ci}: {converted}"))
    if not found:
        names = ", ".join([EXPLICIT_VAR, *(f"{v.index}/{v.total}" for v in SHARD_VARIABLES)])
        raise UsageError(f"--shard auto: no CI shard variables are set ({names}); pass --shard I/N")
    shard, origin = found[0]
    for other, other_origin in found[1:]:
        if other != shard:
            raise UsageError(f"--shard auto: the variables disagree: {origin} is shard {shard}, {other_origin} is "
                             f"shard {other}; unset one, or pass --shard I/N")
    return Shard(shard.index, shard.total, origin)


def assign_shards(names: list[str], total: int, durations: dict[str, float] | None) -> list[list[str]]:
    """Split ``names`` into ``total`` lists; the same input always gives the same split.

    With durations: longest first, each to the least loaded shard (ties: the
    fewer evals, then the lower shard); an eval without a known duration counts as the median.
    Without: round-robin over the sorted names.
    """
    ordered = sorted(set(names))
    shards: list[list[str]] = [[] for _ in range(total)]
    known = {n: d for n, d in (durations or {}).items() if n in ordered and d >= 0}
    if not known:
        for i, name in enumerate(ordered):
            shards[i % total].append(name)
        return shards
    fallback = statistics.median(known.values())
    loads = [0.0] * total
    for name in sorted(ordered, key=lambda n: (-known.get(n, fallback), n)):
        target = min(range(total), key=lambda i: (loads[i], len(shards[i]), i))  # count: zero durations still spread
        shards[target].append(name)
        loads[target] += known.get(name, fallback)
    return [sorted(s) for s in shards]


def select_shard(plan: Plan, shard: Shard, durations: dict[str, float] | None) -> Plan:
    """This machine's share of the plan; the other shards' evals join ``filtered_out``."""
    split = assign_shards([p.name for p in plan.evals], shard.total, durations)
    mine = set(split[shard.index - 1])
    others = [p.name for p in plan.evals if p.name not in mine]
    return plan._replace(
        evals=[p for p in plan.evals if p.name in mine],
        filtered_out=[*plan.filtered_out, *others],
        filters={**plan.filters, "shard": [str(shard)], "shard_split": [split_fingerprint(split)]},
    )


def split_fingerprint(split: list[list[str]]) -> str:
    """A fingerprint of a whole split (each shard's names): merge tells "split differently" from "a shard is
    missing" by it, for run shards and bites shards alike."""
    return hashlib.sha256(json.dumps(split).encode()).hexdigest()[:12]


def durations_from(results_path: Path) -> dict[str, float] | None:
    """Per-eval durations of the evals that ran in a results file; None when there is no such file."""
    if not results_path.exists():
        return None
    results = load_results(results_path)  # a corrupt file is a one-line ResultsError, not a silent imbalance
    return {e.name: e.duration_s for e in results.evals if not e.status.is_unchecked}
