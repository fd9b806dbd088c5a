"""Foreign report formats that become an evalrun report: TAP and JUnit XML.

This subpackage owns the translation of existing test runners' output into the
same thing a native JSON report gives the runner: a list of checks, metrics
and, possibly, an eval-level problem. ``tap.parse_tap`` and
``junit_in.parse_junit`` both return a ``ParsedReport``; the rules they share
(unique check names, skipped tests, size limits) live here so both formats
behave alike.

A skipped test (TAP ``# SKIP``, JUnit ``<skipped>``) is not a check: it
asserted nothing, yet calling it a failure would blame the code for a missing
precondition. It is listed in ``ParsedReport.skipped`` so that the eval's
message says what was not checked, and a skipped test that was baselined shows
up as a vanished check, a regression.
"""

from __future__ import annotations

from evalrun.report import ParsedReport  # noqa: F401 - the one record every format becomes, re-exported

EVIDENCE_LIMIT = 2048  # bytes of evidence kept per check: enough to read, small enough for results files
MESSAGE_LIMIT = 500


def truncate(text: str, limit: int = EVIDENCE_LIMIT) -> str:
    """Cut ``text`` to about ``limit`` UTF-8 bytes, saying how much was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    kept = raw[:limit].decode("utf-8", errors="ignore")
    return f"{kept}\n... ({len(raw) - len(kept.encode('utf-8'))} more bytes cut)"


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message fit for one line of a table: whitespace runs folded, length capped."""
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 3] + "..."


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
