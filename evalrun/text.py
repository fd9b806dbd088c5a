"""Shortening text for messages, tables and files: one way to cut, always saying so.

Callers redact secrets first (``evalrun.secrets``) and cut after, so a cut can
never leave part of a secret behind.
"""

from __future__ import annotations

EVIDENCE_LIMIT = 2048  # bytes of evidence kept per check: enough to read, small enough for results files
MESSAGE_LIMIT = 500  # characters of a one-line message


def truncate(text: str, limit: int = EVIDENCE_LIMIT) -> str:
    """Cut ``text`` to about ``limit`` UTF-8 bytes, saying how much was cut."""
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


def first_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of ``text``, shortened."""
    for line in text.splitlines():
        if line.strip():
            return shorten(line.strip(), limit)
    return ""
