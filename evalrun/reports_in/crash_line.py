"""The line that says why a JavaScript or TypeScript program crashed, among its stack frames.

node, vitest, jest and tsc print the reason on a line of its own — ``Error:
Cannot find module 'x'``, ``TypeError: x is not a function``, ``Error
[ERR_REQUIRE_ESM]: ...``, a bundler's ``[PARSE_ERROR] Expected `}` but found
`EOF```, tsc's ``error TS2322: ...`` — and then a stack of ``at f (file:1:2)``
frames that name functions like ``aggregateBindingErrorsIntoJsError``: they
look like errors to a word search and explain nothing. ``js_error_line``
finds the reason; ``is_stack_frame`` tells a frame, so no search picks one.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_FRAME = re.compile(r"^\s*(?:at\s+\S|❯\s|→\s)")  # node/V8 "at f (file:1:2)", vitest's "❯ file:1:2"
_ERROR = re.compile(  # Error: x / TypeError: x / Error [ERR_X]: x / Uncaught SyntaxError: x
    r"^\s*(?:Uncaught\s+)?(?:[A-Z][A-Za-z]*)?(?:Error|Exception)(?:\s*\[[A-Z0-9_]+\])?:\s*\S"
)
# a bundler's "[PARSE_ERROR] Expected ..." (rolldown, esbuild); not a log level ("[INFO] ...", Maven's "[ERROR] ...")
_CODE = re.compile(r"^\s*\[(?!(?:INFO|DEBUG|TRACE|NOTE|WARN|WARNING|ERROR|FATAL)\])[A-Z][A-Z0-9_]{2,}\]\s+\S")
_TSC = re.compile(r"\berror TS\d+:\s*\S")

# Python's final exception line, and the words of an error line (``evalrun.reports_in.rules.explain_failure``).
EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(: .*)?$")
ERRORISH = re.compile(
    r"(error|exception|fatal|panic|failed|failure|not found|denied|refused|abort|cannot|can't|unable)",
    re.IGNORECASE,
)
# ``  File "/x/score.py", line 12, in main`` (Python); ``    at fn (/x/score.js:12:5)``, ``at file:///x/a.ts:3:1`` (JS/TS):
# the frames ``evalrun.reports_in.rules.crash_place`` reads.
PYTHON_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
JS_FRAME = re.compile(r"^\s*at (?:.*?\()?(?:file://)?(?P<path>[^():]+):(?P<line>\d+):\d+\)?\s*$")


def is_stack_frame(line: str) -> bool:
    return bool(_FRAME.match(_ANSI.sub("", line)))


def js_error_line(lines: list[str]) -> str | None:
    """The reason a JS/TS program gave for its crash, or None if ``lines`` hold no such line.

    A ``[CODE] message`` or tsc line is the reason itself and wins (a bundler's
    ``Error: Build failed with 1 error:`` only announces it); else the last
    ``...Error:`` line.
    """
    plain = [_ANSI.sub("", ln).strip() for ln in lines]
    plain = [ln for ln in plain if ln and not _FRAME.match(ln)]
    specific = [ln for ln in plain if _CODE.match(ln) or _TSC.search(ln)]
    if specific:
        return specific[-1]
    errors = [ln for ln in plain if _ERROR.match(ln)]
    return errors[-1] if errors else None
