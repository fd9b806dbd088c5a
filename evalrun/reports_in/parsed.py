"""The one record every report format becomes, and what the formats share.

The native JSON report, TAP (``tap.parse_tap``) and JUnit XML
(``junit.parse_junit``) all become a ``ParsedReport``: a list of checks,
metrics and, possibly, an eval-level problem. The rules TAP and JUnit share
(unique check names, skipped tests) live here so both formats behave alike.

A skipped test (TAP ``# SKIP``, JUnit ``<skipped>``) is not a check: it
asserted nothing, yet calling it a failure would blame the code for a missing
precondition. It is listed in ``ParsedReport.skipped`` so that the eval's
message says what was not checked, and a skipped test that was baselined shows
up as a vanished check, a regression.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalrun.results import CheckResult


@dataclass(frozen=True)
class ParsedReport:
    """A report in any format (JSON, TAP, JUnit), before the runner's rules."""

    checks: list[CheckResult]
    metrics: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None  # an eval-level failure: "Bail out! db gone", "planned 3, ran 2"
    skipped: list[str] = field(default_factory=list)  # "name (reason)" of each skipped test: not checks
    skip_all: str | None = None  # the whole stream was skipped (TAP "1..0 # SKIP why"): the reason
    source: str = ""  # "TAP" or "JUnit", for messages
    running: str | None = None  # the check in progress when the report was written (JSON, from the SDK)

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
        if name not in self._seen:
            self._seen.add(name)
            return name
        n = self._next.get(name, 2)
        while f"{name} #{n}" in self._seen:
            n += 1
        self._next[name] = n + 1
        candidate = f"{name} #{n}"
        self._seen.add(candidate)
        return candidate
