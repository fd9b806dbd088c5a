"""What a sharded run says of its shard: which one, where ``--shard auto`` read it, and what balanced the split."""

from __future__ import annotations

from evalrun.selection.shards import Shard
from evalrun.selection.timings import HISTORY, RESULTS, Timings
from evalrun.text import plural


def shard_note(shard: Shard, timings: Timings) -> str:
    """``shard 2/4 (CircleCI: CIRCLE_NODE_INDEX=1, CIRCLE_NODE_TOTAL=4, 0-based), balanced by history (median of 5 runs)``."""
    origin = f" ({shard.origin})" if shard.origin else ""
    return f"shard {shard}{origin}, {balance_words(timings)}"


def balance_words(timings: Timings) -> str:
    if timings.source == HISTORY:
        return f"balanced by history (median of {plural(timings.samples, 'run')}, {timings.where})"
    if timings.source == RESULTS:
        return f"balanced by the last results file ({timings.where})"
    return "split by name (round-robin): no durations yet, neither in the history nor in a results file"


def history_unread(problem: str) -> str:
    return f"durations: the history was not read ({problem}); planned without it"


def merged_shards(shards: int) -> str:
    """``merged 3 shard results``: evalrun merge's last line, after the merged run's own."""
    return f"merged {shards} shard results"
