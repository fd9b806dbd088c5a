"""Reading runs over time: each check's series, since when it fails, and which checks flip.

Plain functions over ``StoredRun`` lists (oldest first), shared by the
``history`` command and the HTML report, so both tell the same story.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalrun.history.records import StoredRun

PASSED, FAILED, ABSENT = "passed", "failed", "-"


@dataclass(frozen=True)
class Point:
    """One check in one run. ``status`` is "-" when the check was not there (eval skipped, filtered, errored)."""

    run: StoredRun
    status: str
    assertions: int | None
    message: str | None = None
    runs: int | None = None  # a repeated eval: how often the check ran in that run, and passed
    passes: int | None = None

    @property
    def mixed(self) -> bool:
        """Passed in some repeats of this run and failed in others."""
        return bool(self.runs) and self.passes is not None and 0 < self.passes < (self.runs or 0)


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
        """Mixed outcomes where the code did not change: within one repeated run, or at one commit.

        Runs at the same commit with a clean tree count; a dirty tree may hold
        any change, and a run without a commit says nothing. A check that broke
        at one commit and passed again at a later one is a fixed regression,
        not flaky, however often that happened.
        """
        present = self.present
        if any(p.mixed for p in present):
            return True
        seen: dict[str, str] = {}
        for p in present:
            commit = p.run.git_commit
            if not commit or p.run.git_dirty:
                continue
            if seen.setdefault(commit, p.status) != p.status:
                return True
        return False

    @property
    def newly_failing(self) -> bool:
        present = self.present
        return len(present) >= 2 and present[-1].status == FAILED and present[-2].status == PASSED


@dataclass(frozen=True)
class FailingSince:
    """A failing streak: its first and last run, the last passing run before it, and the run that passed again."""

    first_bad: StoredRun
    last_good: StoredRun | None
    fixed_by: StoredRun | None = None
    last_bad: StoredRun | None = None  # the streak's last run (first_bad when it is one run long)

    def describe(self) -> str:
        """``failing since RUN (commit C; last passed at commit B)``, or ``failed from C to D, fixed at E``."""
        if self.fixed_by is None:
            return f"failing since {self.first_bad.run_id} ({_commit_of(self.first_bad)}; {self._before()})"
        last_bad = self.last_bad or self.first_bad
        span = (f"failed at {_where(self.first_bad)}" if _same_code(self.first_bad, last_bad)
                else f"failed from {_where(self.first_bad)} to {_where(last_bad)}")
        if _same_code(last_bad, self.fixed_by):
            return f"{span}; passed again at the same commit in {self.fixed_by.run_id} (flaky?)"
        return f"{span}, fixed at {_where(self.fixed_by)} ({self.first_bad.run_id} to {self.fixed_by.run_id})"

    def _before(self) -> str:
        good = self.last_good
        if good is None:
            return "it never passed before in the history kept"
        if _same_code(good, self.first_bad):
            return f"it passed at the same commit in {good.run_id}"
        if not good.git_commit:
            return f"last passed in {good.run_id}"
        return f"last passed at commit {good.short_commit}"


def _commit_of(run: StoredRun) -> str:
    return f"commit {run.short_commit}" if run.git_commit else "no commit recorded"


def _where(run: StoredRun) -> str:
    """A run's place in the code's history: its commit, or its id when it has none."""
    return f"commit {run.short_commit}" if run.git_commit else run.run_id


def _same_code(a: StoredRun, b: StoredRun) -> bool:
    return bool(a.git_commit) and a.git_commit == b.git_commit and not a.git_dirty and not b.git_dirty


def check_series(runs: list[StoredRun], eval_name: str | None = None, check: str | None = None) -> list[CheckSeries]:
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
                points.append(Point(run, PASSED if c.passed else FAILED, c.assertions, c.message, c.runs, c.passes))
        out.append(CheckSeries(key[0], key[1], points))
    return out


def in_own_tier(series: list[CheckSeries]) -> list[CheckSeries]:
    """Each series with only the runs of the tiers its check ran in: a run of another tier is not "absent"."""
    out = []
    for s in series:
        tiers = {p.run.tier for p in s.present}
        out.append(CheckSeries(s.eval, s.check, [p for p in s.points if p.run.tier in tiers]))
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
    return FailingSince(present[start].run, last_good, fixed_by, present[end].run)


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
