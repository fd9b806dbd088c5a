"""Reading a baseline file: the fast readers of the form evalrun writes, held equal to tomllib, and tomllib for the rest.

``write_baseline``'s exact form is read line by line (or a whole table at a
time) without a TOML parser, ten times faster on a 1,000,000-check baseline;
a Hypothesis test holds these readers equal to ``tomllib``. Anything else (a
hand edit, another TOML feature, a duplicate key) goes to tomllib. No tomllib
exception leaves this module: each becomes a one-line ``BaselineError`` naming
the file, the place and the fix.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalrun.baseline.judges import JUDGES_TABLE, parse_judges_table, read_judges_entry
from evalrun.baseline.rates import parse_rate_entry
from evalrun.baseline.settings import SETTINGS_TABLE, GateSettings, parse_settings_table, read_settings_entry
from evalrun.baseline.spelling import table_key
from evalrun.text import quote
from evalrun.baseline.store import BASELINE_LIMIT, update_command
from evalrun.errors import BaselineError, file_label
from evalrun.files import FileReadError, read_bounded


class Baseline(dict[str, dict[str, int]]):
    """Check counts per eval; ``settings`` holds each eval's recorded gate settings
    (``evalrun.baseline.settings``), None for a baseline written before they were recorded."""

    settings: dict[str, GateSettings] | None = None
    judges: dict[str, tuple[str, ...]] | None = None  # who judged each eval's checks (evalrun.baseline.judges)


def load_baseline(path: Path) -> Baseline | None:
    """Read a baseline file; ``None`` when it does not exist.

    Raises ``BaselineError`` with one line naming the file and the line (invalid
    TOML) or the key (wrong shape).
    """
    label = file_label(path)
    fix = f"rerun {update_command(path.stem)}"
    try:
        raw = read_bounded(path, BASELINE_LIMIT, "a baseline")
    except FileReadError as exc:
        if exc.missing:
            return None
        raise BaselineError(f"{label}: {exc.reason}; replace it with a baseline file: {fix}") from None
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")  # a byte order mark from a Windows editor
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise BaselineError(f"{label}: line {line}: not UTF-8 text (byte {exc.start}); {fix}") from None
    data = _read_whole_written_form(text)
    if data is None:
        data = _read_written_form(text)
    if data is not None:
        return _with_settings(label, data, fix)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BaselineError(f"{label}: {_describe_toml_error(exc)}; fix that line or {fix}") from None
    except RecursionError:
        raise BaselineError(f"{label}: nested too deeply to be a baseline; {fix}") from None
    except ValueError as exc:  # int() refuses numbers of more than 4300 digits
        raise BaselineError(f"{label}: cannot be read ({' '.join(str(exc).split())[:200]}); {fix}") from None
    settings = data.pop(SETTINGS_TABLE, None)
    judges = data.pop(JUDGES_TABLE, None)
    shaped: dict[str, Any] = _validate_shape(label, data, fix)
    if settings is not None:
        shaped[SETTINGS_TABLE] = settings
    if judges is not None:
        shaped[JUDGES_TABLE] = judges
    return _with_settings(label, shaped, fix)


def _with_settings(label: str, data: dict[str, Any], fix: str) -> Baseline:
    """The counts as a ``Baseline``, the settings table (if any) read into its ``settings``."""
    table = data.pop(SETTINGS_TABLE, None)
    judges = data.pop(JUDGES_TABLE, None)
    baseline = Baseline(data)
    if table is not None:
        baseline.settings = parse_settings_table(label, table, fix)
    if judges is not None:
        baseline.judges = parse_judges_table(label, judges, fix)
    return baseline


# The exact form ``write_baseline`` writes: ``[eval]`` tables of ``"check" = count``
# lines. Reading it line by line is ten times faster than a TOML parser on a
# 1,000,000-check baseline; anything else (a hand edit, another TOML feature, a
# duplicate key) goes to tomllib, whose errors name the line.
_BASIC = r'"((?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\["\\bfnrt]|\\u[0-9A-Fa-f]{4})*)"'
_WRITTEN_TABLE = re.compile(r"\[(?:([A-Za-z0-9_-]+)|" + _BASIC + r")\]\Z")
_COMMENT = re.compile(r"#[^\x00-\x08\x0a-\x1f\x7f]*")
_WRITTEN_ENTRY = re.compile(r"(?:([A-Za-z0-9_-]+)|" + _BASIC + r") = (0|[1-9][0-9]{0,17})\Z")


# The same form matched a whole table at a time: the regular expressions run over
# the text in C, and Python touches each entry once, to build the dict. A file
# with anything else (a comment after the header, a stray line) is left to
# ``_read_written_form``, which reads a superset of this, line by line.
_CHARS = r'[^"\\\x00-\x08\x0a-\x1f\x7f]*'
_BASIC_UNROLLED = r'"(' + _CHARS + r'(?:\\(?:["\\bfnrt]|u[0-9A-Fa-f]{4})' + _CHARS + r')*)"'
_HEAD = re.compile(r"(?:#[^\x00-\x08\x0a-\x1f\x7f]*\n|\n)*")
_TABLE_AT = re.compile(r"\[(?:([A-Za-z0-9_-]+)|" + _BASIC_UNROLLED + r")\](?=\n|\Z)")
_ENTRY_LINES = re.compile(r"^(?:([A-Za-z0-9_-]+)|" + _BASIC_UNROLLED + r") = (0|[1-9][0-9]{0,17})$", re.MULTILINE)
_EMPTY_LINES = re.compile(r"^$", re.MULTILINE)


def _read_whole_written_form(text: str) -> Baseline | None:
    """The baseline if ``text`` is exactly in the form evalrun writes (header comments only), else None."""
    try:
        return _read_whole(text)
    except _NotScalar:
        return None  # tomllib refuses it, naming the line


def _read_whole(text: str) -> Baseline | None:
    start = _HEAD.match(text).end()  # type: ignore[union-attr]  # matches the empty string at least
    data: Baseline = {}
    while start < len(text):
        # A line starting "[" is a table header (no key starts so) or a reason to leave this reader.
        table = _TABLE_AT.match(text, start)
        if table is None:
            return None
        following = text.find("\n[", table.end())
        start = len(text) if following == -1 else following + 1
        name = table.group(1) if table.group(1) is not None else _unescape(table.group(2))
        block = text[table.end() : start]  # from the header's line break to the next header
        if name in data:
            return None
        read_entry = _ONE_LINE_TABLES.get(name)
        if read_entry is not None:  # the settings or judges table: one line per eval
            entries = _one_line_block(block, read_entry)
            if entries is None:
                return None
            data[name] = entries  # type: ignore[assignment]  # split off by load_baseline
            continue
        counts = _quoted_table_as_json(block)
        if counts is not None:
            data[name] = counts
            continue
        found = _ENTRY_LINES.findall(block)
        # Every line of the block that is not empty must be an entry (a match never spans lines).
        # Empty lines: evalrun writes one between tables, so count pairs of line breaks; a longer run is rare.
        if "\n\n\n" in block:
            empty = len(_EMPTY_LINES.findall(block))
        else:  # each pair of line breaks holds one empty line; so may either end
            empty = block.count("\n\n") + (not block or block.startswith("\n")) + block.endswith("\n")
        if len(found) != block.count("\n") + 1 - empty:
            return None
        if "\\" in block:
            counts = {(bare or _unescape(quoted)): int(count) for bare, quoted, count in found}
        else:
            counts = {(bare or quoted): int(count) for bare, quoted, count in found}
        if len(counts) != len(found):
            return None  # a duplicate key: tomllib names it
        data[name] = counts
    return data


# The tables of one line per eval, each with its own line reader (evalrun.baseline.settings, .judges).
_ONE_LINE_TABLES: dict[str, Callable[[str], tuple[str, Any] | None]] = {
    SETTINGS_TABLE: read_settings_entry,
    JUDGES_TABLE: read_judges_entry,
}


def _one_line_block(block: str, read_entry: Callable[[str], tuple[str, Any] | None]) -> dict[str, Any] | None:
    """A one-line-per-eval table's entries, when every line between its header and the next is one (or empty)."""
    table: dict[str, Any] = {}
    for line in block.split("\n"):
        if not line:
            continue
        entry = read_entry(line)
        if entry is None or entry[0] in table:
            return None
        table[entry[0]] = entry[1]
    return table


_QUOTED_BLOCK = re.compile(r'\n(?:"' + _CHARS + r'" = (?:0|[1-9][0-9]{0,17})\n)*+\n?')


def _quoted_table_as_json(block: str) -> dict[str, int] | None:
    """A table's entries, when every key is quoted without escapes (the usual check names), else None.

    Such lines differ from JSON members by their ``" = "`` and line breaks only,
    so ``json.loads`` (in C) builds the dict, ints and all, at twice the speed of
    matching each line: ``"a b" = 3`` -> ``"a b":3``.
    """
    if "\\" in block or _QUOTED_BLOCK.fullmatch(block) is None:
        return None
    entries = block.count("\n") - 1 - block.endswith("\n\n")
    body = block.strip("\n")
    if body.count(" = ") != entries:
        return None  # a key holds " = " itself
    counts = json.loads("{" + body.replace(" = ", ":").replace("\n", ",") + "}", strict=False)  # strict: tabs
    return counts if len(counts) == entries else None  # a duplicate key: tomllib names it


def _read_written_form(text: str) -> Baseline | None:
    """The baseline if ``text`` is exactly in the form evalrun writes, else None."""
    try:
        return _read_lines(text)
    except _NotScalar:
        return None  # tomllib refuses it, naming the line


def _read_lines(text: str) -> Baseline | None:
    data: Baseline = {}
    current: dict[str, Any] | None = None
    in_settings = in_judges = False
    for line in text.split("\n"):  # TOML's only line break (str.splitlines knows many more)
        if not line or (line.startswith("#") and _COMMENT.fullmatch(line)):
            continue
        if in_settings and not line.startswith("["):
            setting = read_settings_entry(line)
            if setting is None or current is None or setting[0] in current:
                return None
            current[setting[0]] = setting[1]
            continue
        if in_judges and not line.startswith("["):
            judged = read_judges_entry(line)
            if judged is None or current is None or judged[0] in current:
                return None
            current[judged[0]] = judged[1]
            continue
        entry = _WRITTEN_ENTRY.match(line)
        if entry is not None:
            key = entry.group(1) if entry.group(1) is not None else _unescape(entry.group(2))
            if current is None or key in current:
                return None
            current[key] = int(entry.group(3))
            continue
        table = _WRITTEN_TABLE.match(line)
        if table is None:
            return None
        name = table.group(1) if table.group(1) is not None else _unescape(table.group(2))
        if name in data:
            return None
        in_settings, in_judges = name == SETTINGS_TABLE, name == JUDGES_TABLE
        current = data[name] = {}
    return data


class _NotScalar(ValueError):
    """A ``\\uXXXX`` escape of a surrogate: TOML forbids it (JSON allows it); tomllib then names the line."""


_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)")


def _unescape(body: str) -> str:
    # TOML's escapes in a basic string, as matched above, are JSON's, but that a \uXXXX escape must be
    # a Unicode scalar value: a surrogate, even one of a pair JSON would join, is not TOML.
    if "\\" not in body:
        return body
    for escape in _ESCAPE.finditer(body):
        code = escape.group(1)
        if len(code) == 5 and 0xD800 <= int(code[1:], 16) <= 0xDFFF:
            raise _NotScalar(code)
    return json.loads(f'"{body}"')


def _describe_toml_error(exc: tomllib.TOMLDecodeError) -> str:
    # Python 3.11's TOMLDecodeError has no lineno attribute; its message ends
    # with "(at line N, column M)". Put the place first, where readers look.
    text = str(exc)
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)$", text)
    if match is None:
        match = re.search(r"\s*\(at end of document\)$", text)
        if match is None:
            return f"invalid TOML ({text})"
        return f"end of file: invalid TOML ({text[: match.start()]})"
    return f"line {match.group(1)}, column {match.group(2)}: invalid TOML ({text[: match.start()]})"


def _validate_shape(label: str, data: dict[str, Any], fix: str) -> Baseline:
    baseline: Baseline = {}
    for eval_name, table in data.items():
        if not isinstance(table, dict):
            raise BaselineError(
                f"{label}: {quote(eval_name)}: must be a table [{table_key(eval_name)}] of "
                f'"check" = assertion count, got {_describe_value(table)}; {fix}'
            )
        counts: dict[str, int] = {}
        for check, count in table.items():
            if isinstance(count, dict) and set(count) & {"assertions", "passes", "runs"}:  # a repeated eval's { assertions, passes, runs } (evalrun.baseline.rates)
                counts[check] = parse_rate_entry(f"{label}: [{table_key(eval_name)}] {quote(check)}", count, fix)
                continue
            # bool is an int in Python, but `true` is not an assertion count.
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise BaselineError(
                    f"{label}: [{table_key(eval_name)}] {quote(check)}: assertion count must be an "
                    f"integer >= 0, got {_describe_value(count)}; {fix}"
                )
            counts[check] = count
        baseline[eval_name] = counts
    return baseline


def _describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"  # dates and times
