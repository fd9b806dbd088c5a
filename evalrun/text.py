"""Shortening and neutralising text for messages, tables and files: one way to cut, one way to show.

The order for any text that came from a scorer, a report, a fixture or the
history: redact secrets first (``evalrun.secrets``), then cut (the functions
here), then ``neutralise`` the final string. A cut never leaves part of a
secret behind, and since the visible forms ``neutralise`` writes are plain
printable ASCII, nothing cut after it can turn back into a control character.
docs/output-safety.md states the rule for users.
"""

from __future__ import annotations

import json
import re

EVIDENCE_LIMIT = 2048  # bytes of evidence kept per check: enough to read, small enough for results files
MESSAGE_LIMIT = 500  # characters of a one-line message


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """``text`` with each lone surrogate (which no UTF-8 can hold: a JSON ``"\\ud800"``, a Python
    ``surrogateescape`` decode) replaced by U+FFFD, so encoding it can never raise."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def truncate(text: str, limit: int = EVIDENCE_LIMIT) -> str:
    """Cut ``text`` to about ``limit`` UTF-8 bytes, saying how much was cut; lone surrogates become U+FFFD."""
    text = well_formed(text)
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    kept = raw[:limit].decode("utf-8", errors="ignore")
    return f"{kept}\n... ({len(raw) - len(kept.encode('utf-8'))} more bytes cut)"


def cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how many were cut (for messages kept in results)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters cut)"


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the cut marked with an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message fit for one line of a table: whitespace runs folded, length capped."""
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 3] + "..."


def quote(text: str) -> str:
    """A name as messages and the baseline's file show it: JSON-quoted, odd characters (quotes, line breaks)
    escaped onto one line, readably (non-ASCII kept)."""
    return json.dumps(text, ensure_ascii=False)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 call``, ``0 calls``, ``2 calls``: the count, then its noun, plural (``many``, else noun + "s") unless one."""
    return f"{count} {noun if count == 1 else (many if many is not None else noun + 's')}"


def seen_words(seen: int, runs: int, skipped: int = 0) -> str:
    """``seen in 2 of 3 runs``, and ``(skipped in 1)`` where a run's report skipped the check's test by name."""
    return f"seen in {seen} of {runs} runs" + (f" (skipped in {skipped})" if skipped else "")


def first_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of ``text``, shortened."""
    for line in text.splitlines():
        if line.strip():
            return shorten(line.strip(), limit)
    return ""


# What must never reach an output raw: the C0 controls but tab (and newline, in a block), DEL, the
# C1 controls (CSI, NEL, ...), the Unicode line and paragraph separators, bidirectional overrides
# (text that reads other than it is), and what UTF-8 or XML 1.0 cannot carry (lone surrogates,
# U+FFFE, U+FFFF). CRLF is one break.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
_UNSAFE_IN_LINE = re.compile(f"\r\n|[\n{_UNSAFE}]")
_UNSAFE_IN_LINES = re.compile(f"\r\n|[{_UNSAFE}]")
# A line GitHub's runner reads as a workflow command: ``::`` (or the legacy ``##[``) after leading whitespace.
_COMMAND_START = re.compile(r"^([^\S\n]*)(?:(:):|(#)#\[)", re.MULTILINE)
_NAMED = {"\r\n": "\\r\\n", "\r": "\\r", "\n": "\\n"}


def neutralise(text: str, *, lines: bool = False) -> str:
    """``text`` made inert for any output: no control character, no line GitHub reads as a command.

    Every control is shown as its escape (ESC as ``\\x1b``, so colour codes
    too; CR as ``\\r``, U+2028 as ``\\u2028``), tab kept; a line break
    is shown as ``\\n`` so the text stays one line, or with ``lines`` kept as a
    real newline (CRLF becomes one) for text shown as a block (evidence, output
    tails). A line that would start with ``::`` or ``##[`` has its first
    character shown as ``\\x3a`` or ``\\x23``. Backslashes are not doubled:
    the form is for reading (the results file keeps the exact text). Applying
    it twice changes nothing. Nothing is dropped, so it never joins pieces of a
    secret that the redaction before it saw apart (``k3y\\x1b[mPART`` stays apart).
    """
    if text.isprintable() and not text.lstrip().startswith(("::", "##[")):
        return text  # most text: no control, tab or line break at all (a quick test, in C)
    text = (_UNSAFE_IN_LINES if lines else _UNSAFE_IN_LINE).sub(_lines_kept if lines else _visible, text)
    return _COMMAND_START.sub(_defused, text)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _lines_kept(match: re.Match[str]) -> str:
    return "\n" if match.group() == "\r\n" else _visible(match)


def _defused(match: re.Match[str]) -> str:
    lead, colon, _ = match.groups()
    return f"{lead}\\x3a:" if colon else f"{lead}\\x23#["
