"""Reading runs over time: each check's series, since when it fails, and which checks flip.

Plain functions over ``RunRecord`` lists (oldest first), shared by the
``history`` command and the HTML report, so both tell the same story.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalrun.history.records import RunRecord

PASSED, FAILED, ABSENT = "passed", "failed", "-"


@dataclass(frozen=True)
class Point:
    """One check in one run. ``status`` is "-" when the check was not there (eval skipped, filtered, errored)."""

    run: RunRecord
    status: str
    assertions: int | None
    message: str | None = None


@dataclass(frozen=True)
class CheckSeries:
    eval: str
    check: str
    points: list[Point] = field(default_factory=list)

    @property
    def present(self) -> list[Point]:
        return [p for p in self.points if p.status != ABSENT]

    @property
    def latest(self) -> Point | None:
        present = self.present
        return present[-1] if present else None

    @property
    def failing(self) -> bool:
        latest = self.latest
        return latest is not None and latest.status == FAILED

    @property
    def pass_rate(self) -> float | None:
        present = self.present
        return sum(p.status == PASSED for p in present) / len(present) if present else None

    @property
    def flips(self) -> int:
        statuses = [p.status for p in self.present]
        return sum(a != b for a, b in zip(statuses, statuses[1:], strict=False))

    @property
    def flaky(self) -> bool:
        """Passed and failed back and forth: at least two changes within the window."""
        return self.flips >= 2

    @property
    def newly_failing(self) -> bool:
        present = self.present
        return len(present) >= 2 and present[-1].status == FAILED and present[-2].status == PASSED


@dataclass(frozen=True)
class FailingSince:
    """A failing streak: its first run, the last passing run before it, and the run that passed again (if any)."""

    first_bad: RunRecord
    last_good: RunRecord | None
    fixed_by: RunRecord | None = None

    def describe(self) -> str:
        commit = self.first_bad.short_commit
        after = (f"first bad after {self.last_good.short_commit}" if self.last_good is not None
                 else "it never passed before in the history kept")
        if self.fixed_by is None:
            return f"failing since {self.first_bad.run_id} (commit {commit}, {after})"
        return (f"failed from {self.first_bad.run_id} (commit {commit}, {after}) until {self.fixed_by.run_id} "
                f"(commit {self.fixed_by.short_commit}) passed again")


def check_series(runs: list[RunRecord], eval_name: str | None = None, check: str | None = None) -> list[CheckSeries]:
    """Every (eval, check) seen in ``runs``, each with one point per run, narrowed to an eval and/or a check name."""
    keys: dict[tuple[str, str], None] = {}
    for run in runs:
        for ev in run.evals:
            if eval_name is not None and ev.name != eval_name:
                continue
            for c in ev.checks:
                if check is None or c.name == check:
                    keys.setdefault((ev.name, c.name), None)
    indexed = [{(ev.name, c.name): c for ev in run.evals for c in ev.checks} for run in runs]
    out = []
    for key in sorted(keys):
        points = []
        for run, found in zip(runs, indexed, strict=True):
            c = found.get(key)
            if c is None:
                points.append(Point(run, ABSENT, None))
            else:
                points.append(Point(run, PASSED if c.passed else FAILED, c.assertions, c.message))
        out.append(CheckSeries(key[0], key[1], points))
    return out


def failing_since(series: CheckSeries) -> FailingSince | None:
    """None unless the check fails in its latest run; runs where it was absent are stepped over."""
    present = series.present
    if not present or present[-1].status != FAILED:
        return None
    return last_failure(series)


def last_failure(series: CheckSeries) -> FailingSince | None:
    """The most recent failing streak of the check (still going, or fixed since), or None if it never failed."""
    present = series.present
    end = len(present) - 1
    while end >= 0 and present[end].status != FAILED:
        end -= 1
    if end < 0:
        return None
    start = end
    while start > 0 and present[start - 1].status == FAILED:
        start -= 1
    last_good = present[start - 1].run if start > 0 else None
    fixed_by = present[end + 1].run if end + 1 < len(present) else None
    return FailingSince(present[start].run, last_good, fixed_by)


def ordered_for_attention(series: list[CheckSeries]) -> list[CheckSeries]:
    """Newly failing first, then flaky, then failing, then the rest; by name within each."""

    def rank(s: CheckSeries) -> int:
        if s.newly_failing:
            return 0
        if s.flaky:
            return 1
        if s.failing:
            return 2
        return 3

    return sorted(series, key=lambda s: (rank(s), s.eval, s.check))
