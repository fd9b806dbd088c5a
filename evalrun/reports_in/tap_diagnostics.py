"""What a failed TAP point says beyond ok/not ok: its YAML block's fields and its ``#`` diagnostics.

``read_yaml_field`` reads a top-level scalar of a YAML diagnostic block without a
YAML library (none is a dependency). ``diagnostics`` folds ``#`` lines into
one message, leaving out what says nothing about the point (Test::More's
``Failed test`` header and ``Looks like you failed`` line, a harness's
counters). ``find_test_more_blocks`` finds Test::More's failure diagnostics on
stderr, where it prints them, by the test name each block starts with.
"""

from __future__ import annotations

import json
import re
from collections import deque

from evalrun.text import EVIDENCE_LIMIT

_FAILED_TEST = re.compile(r"^\s*#\s+Failed test(?: '(?P<name>.*)'\s*$|(?P<rest>\s.*)?$)")
_COUNTER = re.compile(r"^#\s*(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms)\s+[\d.]+\s*$")
_LOOKS_LIKE = re.compile(r"^#\s*Looks like ")
_BLOCK_SCALAR = re.compile(r"^[|>][-+]?\d*$")
_STDERR_LIMIT = 128 * EVIDENCE_LIMIT  # characters of stderr blocks kept, whatever the stderr


def fold_diagnostics(lines: list[str]) -> str:
    """``#`` lines as one message: ``at t.pl line 8.; got: '2'; expected: '3'``.

    Test::More's header (``Failed test 'name'``: the check already has the
    name), its closing ``Looks like you failed...`` and a harness's counters
    (``# tests 3``) say nothing about this point and are left out.
    """
    parts: list[str] = []
    for line in lines:
        body = line.strip()
        if not body.startswith("#") or _LOOKS_LIKE.match(body) or _COUNTER.match(body):
            continue
        header = _FAILED_TEST.match(body)
        if header:
            rest = (header["rest"] or "").strip()
            if rest:
                parts.append(rest)
            continue
        body = body.lstrip("#").strip()
        if body:
            parts.append(body)
    return "; ".join(parts)


def find_test_more_blocks(stderr: str) -> dict[str | None, deque[list[str]]]:
    """Test::More's failure diagnostics on stderr, by the test name they start with (None: unnamed).

    Each block starts at ``#   Failed test 'name'`` and runs over the ``#``
    lines that follow; the blocks of one name are kept in order, so the
    second failed ``x`` gets the second block about ``x``.
    """
    blocks: dict[str | None, deque[list[str]]] = {}
    current: list[str] | None = None
    room = _STDERR_LIMIT
    for line in stderr.splitlines():
        body = line.strip()
        header = _FAILED_TEST.match(body)
        if header:
            name = header["name"] if header["name"] is not None else None
            if name is not None:
                name = name.replace("\\'", "'")
            current = [body]
            blocks.setdefault(name, deque()).append(current)
            room -= len(body)
        elif current is not None and body.startswith("#") and not _LOOKS_LIKE.match(body) and room > 0:
            current.append(body)
            room -= len(body)
        else:
            current = None
    return blocks


def read_yaml_field(lines: list[str], key: str) -> str | None:
    """A top-level scalar of a YAML block, read without a YAML library (none is a dependency)."""
    prefix = f"{key}:"
    for index, line in enumerate(lines):
        if not line.startswith(prefix):
            continue
        value = line[len(prefix) :].strip()
        following = []
        for more in lines[index + 1 :]:
            if more.strip() and not more.startswith(" "):
                break
            following.append(more)
        if _BLOCK_SCALAR.match(value):
            text = "\n".join(_dedent(following))
            return text.replace("\n", " ") if value.startswith(">") else text
        continued = " ".join(part.strip() for part in following if part.strip())
        return _unquote(f"{value} {continued}".strip() if continued else value)
    return None


def _dedent(lines: list[str]) -> list[str]:
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return [line[cut:] for line in lines]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            return value[1:-1]
        return decoded if isinstance(decoded, str) else value[1:-1]
    return value
