"""``format = "exit"``: the program's exit code is the verdict (tsc, eslint, mypy, ruff, cargo check).

Static checkers write no report: they print their findings and exit non-zero.
This module owns what such a run means to evalrun:

- one check, named after the eval, with one assertion: passed when the program
  exited 0, failed otherwise. (One assertion whatever the program checked, so
  such an eval can never say "asserts less"; docs/scorers.md says so);
- a failed check's message is the output's error lines (the eval's message
  adds the exit code: ``check "types" failed: src/a.ts(3,7): error TS2322:
  ... (exited 2)``): diagnostics
  (``src/a.ts(3,7): error TS2322: ...``, ``a.py:3: error: ...``,
  ``a.py:1:8: F401 ...``, ``error[E0308]: ...``), the first few joined, with how
  many more; its evidence is those lines, cut to about 2 KB. An output
  without such a line gives its JavaScript error line or its last line.

The output is the process's kept tail (stdout then stderr), so the reading is
bounded; secrets are redacted before anything is cut (``evalrun.secrets``),
and every output neutralises the text (``evalrun.text.neutralise``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from evalrun.reports_in.crash_line import is_stack_frame, js_error_line
from evalrun.reports_in.parsed import ParsedReport
from evalrun.results import CheckResult
from evalrun.secrets import scrub
from evalrun.text import one_line, plural, shorten, truncate

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ERROR_WORD = re.compile(r"\berror\b", re.IGNORECASE)
# A diagnostic that names its place: "a.py:3:1: ...", "a.py:3: ...", "src/a.ts(3,7): ...", "  3:7  error ..." (eslint)
_PLACE = re.compile(r"^\s*(?:[^\s:()]+(?::\d+(?::\d+)?|\(\d+,\d+\)):\s|\d+:\d+\s+(?:error|warning)\s)")
_SUMMARY = re.compile(r"^\s*(?:Found \d+ errors?|\d+ errors?\b|✖ \d+ problems?)", re.IGNORECASE)
_SHOWN = 3  # error lines in the message; the evidence holds the rest
_LINE_CHARS = 400


def parse_exit(name: str, exit_code: int, output: str, secrets: Iterable[str] = ()) -> ParsedReport:
    """The one check of an eval whose exit code is its verdict; ``output`` is its kept output tail."""
    if exit_code == 0:
        return ParsedReport(checks=[CheckResult(name=name, assertions=1, passed=True)], metrics={}, source="exit code")
    secrets = tuple(secrets)
    lines = [_ANSI.sub("", line).rstrip() for line in scrub(output, secrets).splitlines()]
    errors = error_lines(lines)
    if errors:
        message = "; ".join(shorten(line.strip(), _LINE_CHARS) for line in errors[:_SHOWN])
        if len(errors) > _SHOWN:
            message += f" (and {plural(len(errors) - _SHOWN, 'more error line')})"
        evidence: str | None = truncate("\n".join(errors))
    else:
        why = js_error_line(lines[-200:]) or next((ln.strip() for ln in reversed(lines) if ln.strip()), "")
        message = why or "no output"
        evidence = None
    check = CheckResult(name=name, assertions=1, passed=False, message=one_line(message), evidence=evidence)
    return ParsedReport(checks=[check], metrics={}, source="exit code")


def error_lines(lines: list[str]) -> list[str]:
    """The lines that state a finding: a diagnostic with its place, or one that says error (not a stack
    frame, not the closing count such as ``Found 3 errors``)."""
    return [
        line for line in lines
        if line.strip() and not _SUMMARY.match(line) and not is_stack_frame(line)
        and (_PLACE.match(line) or _ERROR_WORD.search(line))
    ]
