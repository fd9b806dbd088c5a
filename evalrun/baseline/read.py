"""Loading a baseline file: found or not, read within its bound, its tables checked into records.

``load_baseline`` reads ``baselines/<tier>.toml`` (at most ``BASELINE_LIMIT``
bytes), takes evalrun's own written form with the fast readers of
``evalrun.baseline.format`` and anything else (a hand edit) with tomllib, then
checks every table into records: counts (a ``RatedCount`` for a repeated eval),
``GateSettings`` and judge identities. No tomllib exception leaves this module,
and no bad value: each becomes a one-line ``BaselineError`` naming the file, the
place and the fix.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalrun.baseline.format import (
    GUARD_KEYS,
    JUDGES_TABLE,
    OPTIONAL_KEYS,
    RATE_KEYS,
    SETTINGS_KEYS,
    SETTINGS_TABLE,
    read_whole_written_form,
    read_written_form,
    table_key,
)
from evalrun.baseline.judges import Judges
from evalrun.baseline.rates import RatedCount
from evalrun.baseline.settings import GateSettings
from evalrun.baseline.store import BASELINE_LIMIT, update_command
from evalrun.errors import BaselineError, file_label
from evalrun.files import FileReadError, read_bounded
from evalrun.manifest import TIERS
from evalrun.results import JUDGE_ID
from evalrun.text import quote


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
    data = read_whole_written_form(text)
    if data is None:
        data = read_written_form(text)
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
            if isinstance(count, dict) and set(count) & set(RATE_KEYS):  # a repeated eval's { assertions, passes, runs }
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


# --- the records of the tables -----------------------------------------------


def parse_rate_entry(where: str, value: Mapping[str, Any], fix: str) -> RatedCount:
    """``{ assertions = 3, passes = 9, runs = 10 }`` -> ``RatedCount``; a ``BaselineError`` naming ``where`` otherwise."""
    keys = set(value)
    if keys != set(RATE_KEYS):
        extra = sorted(keys - set(RATE_KEYS))
        missing = [k for k in RATE_KEYS if k not in keys]
        problem = f"unknown key {extra[0]!r}" if extra else f"missing {missing[0]!r}"
        raise BaselineError(
            f"{where}: {problem}; a pass-rate entry is {{ assertions = N, passes = N, runs = N }}; {fix}"
        )
    numbers: dict[str, int] = {}
    for key in RATE_KEYS:
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise BaselineError(f"{where}: {key} must be an integer >= 0, got {number!r}; {fix}")
        numbers[key] = number
    if numbers["passes"] > numbers["runs"] or numbers["runs"] == 0:
        raise BaselineError(
            f"{where}: passes ({numbers['passes']}) must be at most runs ({numbers['runs']}) and runs > 0; {fix}"
        )
    return RatedCount(numbers["assertions"], numbers["passes"], numbers["runs"])


def parse_settings_table(label: str, table: Any, fix: str) -> dict[str, GateSettings]:
    """The ``["/settings"]`` table -> settings per eval; a one-line ``BaselineError`` otherwise."""
    where = f"{label}: [{table_key(SETTINGS_TABLE)}]"
    if not isinstance(table, dict):
        raise BaselineError(f"{where}: must be a table of eval = {{ tier = ..., repeat = ..., ... }}; {fix}")
    return {name: parse_settings_entry(f"{where} {quote(name)}", value, fix) for name, value in table.items()}


def parse_settings_entry(where: str, value: Any, fix: str) -> GateSettings:
    if not isinstance(value, dict):
        raise BaselineError(f"{where}: must be an inline table {{ tier = ..., repeat = ..., ... }}; {fix}")
    unknown = sorted(set(value) - set(SETTINGS_KEYS) - set(OPTIONAL_KEYS) - set(GUARD_KEYS))
    if unknown:
        known = ", ".join((*SETTINGS_KEYS, *OPTIONAL_KEYS, *GUARD_KEYS))
        raise BaselineError(f"{where}: unknown setting {unknown[0]!r}; known: {known}; {fix}")
    missing = [k for k in SETTINGS_KEYS if k not in value]
    if missing:
        raise BaselineError(f"{where}: missing setting {missing[0]!r}; {fix}")

    def bad(key: str, want: str) -> BaselineError:
        return BaselineError(f"{where}: {key} must be {want}, got {value[key]!r}; {fix}")

    if value["tier"] not in TIERS:
        raise bad("tier", "one of " + ", ".join(TIERS))
    repeat = value["repeat"]
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise bad("repeat", "an integer >= 1")
    numbers = {}
    for key, low, high in (("min_pass_rate", 0.0, 1.0), ("alpha", 0.0, 1.0)):
        number = value[key]
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) \
                or not low <= number <= high:
            raise bad(key, f"a number from {low:g} to {high:g}")
        numbers[key] = float(number)
    if value["stop"] not in ("never", "decided"):
        raise bad("stop", '"never" or "decided"')
    if value["skips"] not in ("skip", "fail"):
        raise bad("skips", '"skip" or "fail"')
    requires = value["requires"]
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise bad("requires", "an array of strings")
    if not isinstance(value["strict"], bool):
        raise bad("strict", "true or false")
    if value.get("too_little_data", "note") not in ("note", "fail"):
        raise bad("too_little_data", '"note" or "fail"')
    floors: dict[str, float | None] = {}
    for key in ("min_kappa", "min_ac1"):
        number = value.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))
                                   or not math.isfinite(number) or not -1 <= number <= 1):
            raise bad(key, "a number from -1 to 1")
        floors[key] = None if number is None else float(number)
    if value.get("network", "host") not in ("loopback", "host"):
        raise bad("network", '"loopback" or "host"')
    for key in ("require_isolation", "strict_replay"):
        if key in value and not isinstance(value[key], bool):
            raise bad(key, "true or false")
    key_vars = value.get("key_vars")
    if key_vars is not None and (not isinstance(key_vars, list) or not all(isinstance(k, str) for k in key_vars)):
        raise bad("key_vars", "an array of strings")
    if value.get("replay_match", "index") not in ("request", "index"):
        raise bad("replay_match", '"request" or "index"')
    return GateSettings(
        tier=value["tier"], repeat=repeat, min_pass_rate=numbers["min_pass_rate"], alpha=numbers["alpha"],
        stop=value["stop"], skips=value["skips"], requires=tuple(sorted(set(requires))), strict=value["strict"],
        too_little_data=value.get("too_little_data", "note"), **floors,
        network=value.get("network"), require_isolation=value.get("require_isolation"),
        key_vars=None if key_vars is None else tuple(sorted(set(key_vars))),
        replay_match=value.get("replay_match"), strict_replay=value.get("strict_replay"),
    )


def parse_judges_table(label: str, table: Any, fix: str) -> Judges:
    """The ``["/judges"]`` table -> identities per eval; a one-line ``BaselineError`` otherwise."""
    where = f"{label}: [{table_key(JUDGES_TABLE)}]"
    if not isinstance(table, dict):
        raise BaselineError(f'{where}: must be a table of eval = ["MODEL#HASH", ...]; {fix}')
    out: Judges = {}
    for name, ids in table.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) and _ID_FULL.fullmatch(i) for i in ids):
            raise BaselineError(
                f'{where} {quote(name)}: must be a list of judge identities "MODEL#HASH"; {fix}'
            )
        out[name] = tuple(sorted(set(ids)))
    return out


_ID_FULL = re.compile(JUDGE_ID)
