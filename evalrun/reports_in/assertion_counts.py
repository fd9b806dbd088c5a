"""Assertion counts for JUnit testcases, from the files evalrun's vitest and jest setup files write.

JUnit carries no assertion counts, so "asserts less" (exit 3) could never fire
for a JUnit producer. vitest and jest know the count: ``expect.getState()
.assertionCalls`` after each test. evalrun ships one small setup file for each
(``evalrun/reports_in/js/``, printed by ``evalrun setup-file vitest|jest``);
under evalrun (``EVALRUN_WORKDIR`` set) it appends one JSON line per finished
test to a file of its own worker in ``$EVALRUN_WORKDIR/assertion-counts/``::

    {"v": 1, "runner": "vitest", "file": "/abs/tests/cart.test.ts", "titles": ["math", "adds"], "assertions": 2}

This module owns that folder's format: reading it, bounded (``REPORT_LIMIT``
bytes in all, ``_FILES_LIMIT`` files, ``CHECK_LIMIT`` lines), into counts
keyed by the test's titles and file, and finding a testcase's count. A file
that is not that format is refused with one line naming the file, the line and
the fix (it fails that eval alone, as a bad report does). The folder is in the
run's own scratch folder, fresh for every run, so no earlier run's counts can
pass for this one's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.errors import ReportError, UsageError
from evalrun.files import FileReadError, read_bounded
from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, CHECK_LIMIT, NAME_LIMIT, REPORT_LIMIT, REPORT_WHAT

COUNTS_DIR_NAME = "assertion-counts"  # in EVALRUN_WORKDIR; the setup files write here
VERSION = 1
RUNNERS = ("vitest", "jest")
SEPARATOR = " > "  # the titles are joined so, as vitest names a testcase and jest-junit's recipe settings do
_FILES_LIMIT = 1000  # a worker writes one file: far above any machine's workers
_TITLES_LIMIT = 100  # describe blocks deep
SETUP_DIR = Path(__file__).resolve().parent / "js"  # package data
SETUP_FILES = {"vitest": "vitest.setup.mjs", "jest": "jest.setup.cjs"}
_FIX = "copy the setup file again (evalrun setup-file vitest|jest, see docs/recipes-junit.md)"


@dataclass
class AssertionCounts:
    """What the setup files recorded: for each joined title path, the (file, count) of each test of that path."""

    runners: set[str] = field(default_factory=set)
    by_title: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    lines: int = 0

    def add(self, file: str, titles: list[str], assertions: int) -> None:
        self.by_title.setdefault(SEPARATOR.join(titles), []).append((_normal(file), assertions))
        self.lines += 1

    def lookup(self, titles: Iterable[str], files: Iterable[str]) -> int | None:
        """The count of the test whose joined titles are one of ``titles`` and whose file ends with one of ``files``.

        The JUnit file names the test file relative to the tool's root, the setup file absolutely: a
        path that ends with the JUnit one at a ``/`` is the same file. A test recorded twice (the same
        titles in one file, or retried) counts its most, as two testcases of one check do.
        """
        wanted = [f for f in (_normal(f) for f in files) if f]
        best: int | None = None
        for title in titles:
            for file, count in self.by_title.get(title, ()):
                if any(file == w or file.endswith("/" + w) for w in wanted):
                    best = count if best is None else max(best, count)
        return best


def setup_file_path(runner: str) -> Path:
    """The setup file that records assertion counts for ``runner`` (vitest or jest), shipped in the package."""
    if runner not in SETUP_FILES:
        raise UsageError(f"no setup file for {runner!r}; use one of {', '.join(SETUP_FILES)}")
    return SETUP_DIR / SETUP_FILES[runner]


def _normal(file: str) -> str:
    file = file.strip().replace("\\", "/")
    while file.startswith("./"):
        file = file[2:]
    return file


def read_assertion_counts(folder: Path, label: str) -> AssertionCounts | None:
    """The counts in ``folder``, or None when no setup file wrote there (the folder does not exist)."""
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise ReportError(f"assertion counts {label}: is not a folder; {_FIX}") from None
    except OSError as exc:
        raise ReportError(f"assertion counts {label}: cannot list it ({exc.strerror}); {_FIX}") from None
    if len(entries) > _FILES_LIMIT:
        raise ReportError(f"assertion counts {label}: more than {_FILES_LIMIT:,} files, the most evalrun reads; {_FIX}")
    counts = AssertionCounts()
    room = REPORT_LIMIT
    for entry in entries:
        where = f"{label}/{entry.name[:100]}"
        try:
            raw = read_bounded(Path(entry.path), room, REPORT_WHAT)
        except FileReadError as exc:
            raise ReportError(f"assertion counts {where}: {exc.reason}; {_FIX}") from None
        room -= len(raw)
        parse_assertion_counts(raw, where, counts)
    return counts


def parse_assertion_counts(raw: bytes, label: str, counts: AssertionCounts | None = None) -> AssertionCounts:
    """Add the JSON lines of one setup file's output to ``counts``; ReportError naming the line if one is not one."""
    counts = counts if counts is not None else AssertionCounts()
    for number, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"assertion counts {label}: line {number}"
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise ReportError(f"{where}: not JSON; {_FIX}") from None
        if not isinstance(record, dict):
            raise ReportError(f"{where}: not a JSON object; {_FIX}")
        if record.get("v") != VERSION:
            raise ReportError(f"{where}: version {_shown(record.get('v'))}, not {VERSION}; {_FIX}")
        runner, file, titles, assertions = (record.get(k) for k in ("runner", "file", "titles", "assertions"))
        if runner not in RUNNERS:
            raise ReportError(f"{where}: runner {_shown(runner)} is not one of {', '.join(RUNNERS)}; {_FIX}")
        if not isinstance(file, str) or not file.strip() or len(file) > NAME_LIMIT * 4:
            raise ReportError(f"{where}: file must be the test file's path; {_FIX}")
        if (not isinstance(titles, list) or not titles or len(titles) > _TITLES_LIMIT
                or not all(isinstance(t, str) for t in titles) or sum(len(t) for t in titles) > NAME_LIMIT * 4):
            raise ReportError(f"{where}: titles must be a list of the test's describe and test titles; {_FIX}")
        if type(assertions) is not int or not 0 <= assertions <= ASSERTIONS_LIMIT:
            raise ReportError(f"{where}: assertions must be a whole number from 0 to {ASSERTIONS_LIMIT:,}; {_FIX}")
        if counts.lines >= CHECK_LIMIT:
            raise ReportError(f"{where}: more than {CHECK_LIMIT:,} tests, the most evalrun reads from one report")
        counts.runners.add(runner)
        counts.add(file, titles, assertions)
    return counts


def _shown(value: object) -> str:
    text = json.dumps(value)[:40] if not isinstance(value, str) else repr(value[:40])
    return text
