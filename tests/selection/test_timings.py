"""Durations that plan a run (evalrun.selection.timings) and the shard a CI names (--shard auto)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.errors import UsageError
from evalrun.selection.shards import SHARD_VARIABLES, Shard, assign_shards, auto_shard, parse_shard
from evalrun.selection.timings import longest_first, median_durations


def test_an_evals_figure_is_the_median_of_its_last_five_runs() -> None:
    rows = [("a", 10.0), ("b", 1.0), ("a", 1.0), ("a", 2.0), ("a", 3.0), ("a", 4.0), ("a", 900.0)]  # most recent first
    durations, samples = median_durations(rows)
    assert durations == {"a": 3.0, "b": 1.0}  # 900 s is the sixth run back: out of the window
    assert samples == 5


def test_longest_first_keeps_plan_order_among_equals_and_counts_the_unknown_as_the_median() -> None:
    names = ["a", "b", "new", "long", "c"]
    assert longest_first(names, {"a": 1.0, "b": 1.0, "long": 9.0, "c": 2.0}) == [3, 4, 2, 0, 1]
    assert longest_first(names, {}) is None  # no figures: plan order


@pytest.mark.parametrize(
    ("environ", "shard", "origin"),
    [
        ({"EVALRUN_SHARD": "2/4"}, (2, 4), "EVALRUN_SHARD=2/4"),
        ({"EVALRUN_SHARD_INDEX": "0", "EVALRUN_SHARD_TOTAL": "3"}, (1, 3), "GitHub matrix: EVALRUN_SHARD_INDEX=0, EVALRUN_SHARD_TOTAL=3, 0-based"),
        ({"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "3"}, (3, 3), "GitLab: CI_NODE_INDEX=3, CI_NODE_TOTAL=3"),
        ({"CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "2"}, (1, 2), "CircleCI: CIRCLE_NODE_INDEX=0, CIRCLE_NODE_TOTAL=2, 0-based"),
        ({"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "5"}, (5, 5), "Buildkite: BUILDKITE_PARALLEL_JOB=4, BUILDKITE_PARALLEL_JOB_COUNT=5, 0-based"),
        # GitLab sets CI_NODE_TOTAL=1 on every job without parallel: that names no shard, CircleCI's does
        ({"CI_NODE_TOTAL": "1", "CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "2"}, (2, 2), "CircleCI"),
        # two sources that agree
        ({"EVALRUN_SHARD": "1/2", "CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"}, (1, 2), "EVALRUN_SHARD=1/2"),
    ],
)
def test_auto_reads_each_cis_variables_in_its_own_base(environ: dict[str, str], shard: tuple[int, int], origin: str) -> None:
    found = parse_shard("auto", environ)
    assert (found.index, found.total) == shard
    assert found.origin is not None and found.origin.startswith(origin)
    assert found == Shard(*shard)  # where it came from is not part of which shard it is


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        ({}, "no CI shard variables are set"),
        ({"CI_NODE_TOTAL": "1"}, "no CI shard variables are set"),
        ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"}, "CI_NODE_INDEX=0 is out of range for CI_NODE_TOTAL=4 (GitLab counts from 1: 1 to 4)"),
        ({"CIRCLE_NODE_INDEX": "2", "CIRCLE_NODE_TOTAL": "2"}, "(CircleCI counts from 0: 0 to 1)"),
        ({"BUILDKITE_PARALLEL_JOB_COUNT": "4"}, "BUILDKITE_PARALLEL_JOB_COUNT is set but BUILDKITE_PARALLEL_JOB is not"),
        ({"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "2"}, "expected whole numbers"),
        ({"EVALRUN_SHARD": "3/2"}, "EVALRUN_SHARD='3/2': shards count from 1"),
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4", "CIRCLE_NODE_INDEX": "0", "CIRCLE_NODE_TOTAL": "3"},
         "the variables disagree: GitLab: CI_NODE_INDEX=1, CI_NODE_TOTAL=4 is shard 1/4, CircleCI"),
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2", "CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "2"},
         "the variables disagree"),  # the same total, another index
    ],
)
def test_auto_refuses_what_names_no_single_shard_in_one_line(environ: dict[str, str], words: str) -> None:
    with pytest.raises(UsageError) as caught:
        auto_shard(environ)
    message = str(caught.value)
    assert words in message and message.startswith("--shard auto: ") and "\n" not in message


_VALUES = st.one_of(st.integers(-2, 12).map(str), st.text(max_size=6))
_NAMES = [name for v in SHARD_VARIABLES for name in (v.index, v.total)] + ["EVALRUN_SHARD"]


@given(st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=6))
def test_auto_gives_a_shard_in_range_or_one_line(environ: dict[str, str]) -> None:
    try:
        shard = auto_shard(environ)
    except UsageError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("--shard auto: ")
    else:
        assert 1 <= shard.index <= shard.total
        assert assign_shards(["a", "b", "c"], shard.total, None)  # a split exists for it
