"""How long each eval takes, from what the project already keeps: the history, else the last results file.

Two uses read it. ``--shard`` splits by it: every shard reads the same store,
so every shard computes the same split. And a run with more evals than
workers starts the longest first, so ``-j N`` finishes sooner; results stay
in plan order. An eval's figure is the median of its last ``SAMPLES``
durations at the tier (one slow night does not move it); an eval with no
figure yet counts as the median of the others.

Reading is a side channel: a history that cannot be read falls back to the
results file, then to names, and says why; it never changes the exit code.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from evalrun.errors import EvalrunError
from evalrun.manifest import Manifest

if TYPE_CHECKING:
    from evalrun.history.location import HistoryLocation

SAMPLES = 5  # the last durations an eval's figure is the median of
WINDOW = 60  # timed runs and shards looked at: 5 nights of 12 shards
READ_TIMEOUT = 10.0  # seconds at most that planning waits for the history (the run's own write keeps its timeout)

HISTORY, RESULTS, NONE = "history", "results", "none"


@dataclass(frozen=True)
class Timings:
    """Each eval's expected duration and where it came from."""

    durations: dict[str, float] = field(default_factory=dict)
    source: str = NONE  # history, results or none
    samples: int = 0  # history: the most durations any one figure is the median of
    where: str = ""  # the history's or the results file's location, for messages
    problem: str | None = None  # why the history was not used, when it is set up but could not be read

    @property
    def known(self) -> bool:
        return bool(self.durations)

    def only(self, names: Sequence[str]) -> Timings:
        """The figures of ``names`` alone (the planned evals), so an eval's median ignores evals gone from the tier."""
        wanted = set(names)
        return replace(self, durations={n: d for n, d in self.durations.items() if n in wanted})


def longest_first(names: Sequence[str], durations: Mapping[str, float]) -> list[int] | None:
    """Positions of ``names`` in the order to start them: longest first (a name without a figure counts as the
    median), plan order among equals; None without figures (plan order)."""
    if not durations:
        return None
    middle = statistics.median(durations.values())
    return sorted(range(len(names)), key=lambda i: (-durations.get(names[i], middle), i))


def median_durations(rows: Sequence[tuple[str, float]], samples: int = SAMPLES) -> tuple[dict[str, float], int]:
    """Each eval's median over its first ``samples`` rows (rows: most recent first), and the most rows any used."""
    seen: dict[str, list[float]] = {}
    for name, seconds in rows:
        kept = seen.setdefault(name, [])
        if len(kept) < samples and seconds >= 0:
            kept.append(seconds)
    durations = {name: statistics.median(kept) for name, kept in seen.items() if kept}
    return durations, max((len(k) for k in seen.values()), default=0)


def load_timings(manifest: Manifest, tier: str, environ: Mapping[str, str], results_path: Path,
                 locate: Callable[[], HistoryLocation | None] | None = None) -> Timings:
    """The history's figures where it is set up and holds the tier's runs; else the last results file's; else none."""
    from_history = _from_history(manifest, tier, environ, locate)
    if from_history.known:
        return from_history
    from_results = _from_results(results_path)
    return replace(from_results, problem=from_history.problem)


def _from_history(manifest: Manifest, tier: str, environ: Mapping[str, str],
                  locate: Callable[[], HistoryLocation | None] | None = None) -> Timings:
    from evalrun.history.location import locate_history

    try:
        location = locate() if locate is not None else locate_history(manifest, environ)
    except EvalrunError as exc:  # a bad EVALRUN_HISTORY_URL: the run's own history step says it too
        return Timings(problem=str(exc))
    if location is None:
        return Timings()
    if location.kind == "sqlite" and not Path(location.target).is_file():
        return Timings()  # no history yet: planning never creates one
    from evalrun.history.backends import use_store
    from evalrun.history.store import HistoryError

    bounded = location._replace(timeout=min(location.timeout, READ_TIMEOUT))
    try:
        rows = use_store(bounded, lambda store: store.durations(tier, WINDOW))
    except HistoryError as exc:
        return Timings(problem=str(exc))
    durations, samples = median_durations(rows)
    return Timings(durations, HISTORY if durations else NONE, samples, location.shown)


def _from_results(results_path: Path) -> Timings:
    from evalrun.selection.shards import durations_from

    durations = durations_from(results_path)
    if not durations:
        return Timings()
    return Timings(durations, RESULTS, 1, str(results_path))
