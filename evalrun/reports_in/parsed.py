"""The one record every report format becomes, and what the formats share.

The native JSON report, TAP (``tap.parse_tap``) and JUnit XML
(``junit.parse_junit``) all become a ``ParsedReport``: a list of checks,
metrics and, possibly, an eval-level problem. The rules TAP and JUnit share
(unique check names, skipped tests) live here so both formats behave alike.

An expected failure (TAP ``# TODO``, pytest's xfail, node's todo) is a
passing check whose message says whether it failed as expected or passes now.

A skipped test (TAP ``# SKIP``, JUnit ``<skipped>``) is not a check: it
asserted nothing, yet calling it a failure would blame the code for a missing
precondition. It is listed in ``ParsedReport.skipped`` so that the eval's
message says what was not checked, and a skipped test that was baselined shows
up as a vanished check, a regression.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from evalrun.results import CheckResult

REPORT_LIMIT = 32 * 1024 * 1024  # bytes read from any one report: far above a real suite's, far below harm
REPORT_WHAT = "one report"  # in "is larger than 32 MiB, the most evalrun reads from one report"
NAME_LIMIT = 1000  # characters of a check or metric name: names live in baselines, one per line
ASSERTIONS_LIMIT = 1_000_000_000  # a larger count is a scorer's bug, and no consumer need hold it
CHECK_LIMIT = 100_000  # checks (TAP points, testcases) read from one report: bounds memory, not real suites


def expected_failure_note(label: str, reason: str, *, failed: bool) -> str:
    """The message of an expected failure, alike in every format (TAP ``# TODO``, pytest xfail, node todo).

    An expected failure is a passing check either way: one that failed as
    expected says so; one that passes now (XPASS) says the mark can go.
    """
    head = f"{label} {' '.join(reason.split())}".strip()
    return f"{head}: fails as expected" if failed else f"{head}: passes now; remove the {label}"


class Skip(NamedTuple):
    """A test the report lists but did not run (a skip, a todo): not a check, shown with its reason."""

    name: str
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.name} ({self.reason})" if self.reason else self.name


class ParsedReport(NamedTuple):
    """A report in any format (JSON, TAP, JUnit), before the runner's rules.

    Read-only (``_replace`` makes a changed copy); the metrics are given by every reader (no shared default:
    they become the result's), the lists default to empty tuples.
    """

    checks: list[CheckResult]
    metrics: dict[str, Any]
    problem: str | None = None  # an eval-level failure: "Bail out! db gone", "planned 3, ran 2"
    skips: list[Skip] | tuple[Skip, ...] = ()  # each skipped test, in report order: not checks
    skip_all: str | None = None  # the whole stream was skipped (TAP "1..0 # SKIP why"): the reason
    source: str = ""  # "TAP" or "JUnit", for messages
    running: str | None = None  # the check in progress when the report was written (JSON, from the SDK)
    notes: list[str] | tuple[str, ...] = ()  # what the reader could not tell, said with the eval's message

    @property
    def skipped(self) -> list[str]:
        """``name (reason)`` of each skipped test."""
        return [str(s) for s in self.skips]

    def skipped_note(self) -> str | None:
        """One line for the eval's message, e.g. ``skipped in TAP: network (no network)``; None if none."""
        if self.skip_all is not None:
            return f"everything skipped in {self.source}: {self.skip_all}"
        if not self.skipped:
            return None
        return f"skipped in {self.source}: " + "; ".join(self.skipped)


class NameDeduper:
    """Make check names unique, deterministically, in the order they appear.

    TAP and JUnit producers legitimately repeat a description (a loop of
    ``ok($x, "is positive")``), while the runner treats duplicate check names as
    an error. The second ``x`` becomes ``x #2``, the third ``x #3``: stable as
    long as the producer's order is, so baselines keep matching.
    """

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._next: dict[str, int] = {}

    def unique(self, name: str) -> str:
        name = _fit(name, "")
        if name not in self._seen:
            self._seen.add(name)
            return name
        n = self._next.get(name, 2)
        while _fit(name, f" #{n}") in self._seen:
            n += 1
        self._next[name] = n + 1
        candidate = _fit(name, f" #{n}")
        self._seen.add(candidate)
        return candidate


def _fit(name: str, suffix: str) -> str:
    """``name + suffix`` within NAME_LIMIT characters: the name is cut, never the suffix that makes it unique."""
    if len(name) + len(suffix) <= NAME_LIMIT:
        return name + suffix
    return name[: NAME_LIMIT - len(suffix) - 1] + "…" + suffix
