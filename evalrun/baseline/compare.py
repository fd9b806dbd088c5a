"""The baseline gate: ``baselines/<tier>.toml`` and what a run is compared against.

This module owns the baseline file (its path, its shape, reading and writing
it) and the two decisions made from it: how a run differs from the baseline
(``compare_to_baseline``) and what ``evalrun baseline --update`` records
(``update_baseline``). Everything here is a pure function over plain data; the
CLI wires it in. No tomllib exception leaves this module: each
becomes a one-line ``BaselineError`` naming the file, the place and the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from evalrun.atomic import write_atomic
from evalrun.baseline_rates import RatedCount, counts_of, diff_rates, parse_rate_entry
from evalrun.baseline_judges import (
    JUDGES_TABLE, diff_judges, judges_line, parse_judges_table, read_judges_entry,
)
from evalrun.baseline_settings import (
    SETTINGS_TABLE, GateSettings, diff_settings, gate_settings, parse_settings_table, read_settings_entry,
    settings_line, tier_move,
)
from evalrun.errors import BaselineError, BaselineRefused, file_label
from evalrun.files import FileReadError, read_bounded
from evalrun.manifest import TIERS, Manifest
from evalrun.plan import tier_cells
from evalrun.results import BaselineChange, BaselineComparison, EvalResult, RunResults, Status
from evalrun.text import one_line



class Baseline(dict[str, dict[str, int]]):
    """Check counts per eval; ``settings`` holds each eval's recorded gate settings
    (``evalrun.baseline_settings``), None for a baseline written before they were recorded."""

    settings: dict[str, GateSettings] | None = None
    judges: dict[str, tuple[str, ...]] | None = None  # who judged each eval's checks (evalrun.baseline_judges)


# Only these statuses mean the scorer produced a report whose checks can be
# compared; everything else was not checked (or crashed) and is listed instead.
BASELINE_LIMIT = 1024**3  # bytes read of a baseline: 1,000,000 checks take a twentieth of it
_COMPARED = (Status.PASSED, Status.FAILED)
# A failing or unfinished state is never recorded as the baseline.
_REFUSED = (Status.FAILED, Status.ERROR, Status.TIMEOUT, Status.INTERRUPTED)
# Not checked this run, but nothing is wrong with the eval: keep what was recorded.
_KEPT = (Status.SKIPPED, Status.BUDGET)

_STALE_KINDS = ("new-eval", "new-check", "stronger", "improved", "new-rate", "new-settings", "tightened", "moved-stricter",
                "judge-changed")


def baseline_path(manifest: Manifest, tier: str) -> Path:
    """Where the baseline of ``tier`` lives: ``<manifest root>/<baseline.dir>/<tier>.toml``."""
    return manifest.root / manifest.baseline.dir / f"{tier}.toml"


def baseline_lock(manifest: Manifest, path: Path) -> Path:
    """The lock held while a baseline is read, updated and written: kept out of the committed folder."""
    return manifest.root / ".evalrun" / "locks" / f"{path.name}.lock"


def baseline_fingerprint(path: Path) -> str | None:
    """The sha256 of a baseline file's bytes; None when there is none (or it cannot be read: loading says why)."""
    try:
        return hashlib.sha256(read_bounded(path, BASELINE_LIMIT, "a baseline")).hexdigest()
    except FileReadError:
        return None


def _written_mark(manifest: Manifest, path: Path) -> Path:
    """Beside the lock: the fingerprint of the file the last ``baseline --update`` wrote."""
    return baseline_lock(manifest, path).with_suffix(".written")


def check_unchanged_since(manifest: Manifest, path: Path, snapshot: str | None, command: str) -> None:
    """Under the baseline's lock: BaselineError unless the file is as it was before the scorers ran.

    Another ``baseline --update`` that wrote it meanwhile is fine (its counts are
    merged, never lost); anything else that changed it — a scorer, an editor —
    would have its counts recorded as if this run decided them, so nothing is written.
    """
    now = baseline_fingerprint(path)
    if now == snapshot:
        return
    try:
        mark = _written_mark(manifest, path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        mark = None
    if now is not None and now == mark:
        return
    raise BaselineError(
        f"{file_label(path)}: changed while the evals ran, and not by evalrun baseline --update (a scorer or an "
        f"editor wrote it); nothing was written: look at the change, then {command}"
    )


def mark_written(manifest: Manifest, path: Path) -> None:
    """Record the fingerprint of the baseline just written, for ``check_unchanged_since`` in a concurrent update."""
    fingerprint = baseline_fingerprint(path)
    if fingerprint is not None:
        with contextlib.suppress(OSError):
            write_atomic(_written_mark(manifest, path), fingerprint + "\n")


def update_command(tier: str, manifest_path: Path | None = None) -> str:
    """The command that regenerates a tier's baseline, quoted in every hint (with ``--manifest`` when not the default)."""
    extra = ""
    if manifest_path is not None:
        default = Path("manifest.toml")
        if manifest_path != default and manifest_path.resolve() != default.resolve():
            extra = f" --manifest {manifest_path}"
    return f"evalrun baseline --update {tier}{extra}"


# --- reading -----------------------------------------------------------------


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
        if name == SETTINGS_TABLE:  # one line per eval: evalrun.baseline_settings
            settings = _settings_block(block)
            if settings is None:
                return None
            data[name] = settings  # type: ignore[assignment]  # split off by load_baseline
            continue
        if name == JUDGES_TABLE:  # one line per eval: evalrun.baseline_judges
            judges = _judges_block(block)
            if judges is None:
                return None
            data[name] = judges  # type: ignore[assignment]  # split off by load_baseline
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


def _settings_block(block: str) -> dict[str, Any] | None:
    """The settings table's entries, when every line between its header and the next is one (or empty)."""
    table: dict[str, Any] = {}
    for line in block.split("\n"):
        if not line:
            continue
        entry = read_settings_entry(line)
        if entry is None or entry[0] in table:
            return None
        table[entry[0]] = entry[1]
    return table


def _judges_block(block: str) -> dict[str, Any] | None:
    """The judges table's entries, when every line between its header and the next is one (or empty)."""
    table: dict[str, Any] = {}
    for line in block.split("\n"):
        if not line:
            continue
        entry = read_judges_entry(line)
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
                f"{label}: {_quote(eval_name)}: must be a table [{_table_key(eval_name)}] of "
                f'"check" = assertion count, got {_describe_value(table)}; {fix}'
            )
        counts: dict[str, int] = {}
        for check, count in table.items():
            if isinstance(count, dict) and set(count) & {"assertions", "passes", "runs"}:  # a repeated eval's { assertions, passes, runs } (evalrun.baseline_rates)
                counts[check] = parse_rate_entry(f"{label}: [{_table_key(eval_name)}] {_quote(check)}", count, fix)
                continue
            # bool is an int in Python, but `true` is not an assertion count.
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise BaselineError(
                    f"{label}: [{_table_key(eval_name)}] {_quote(check)}: assertion count must be an "
                    f"integer >= 0, got {_describe_value(count)}; {fix}"
                )
            counts[check] = count
        baseline[eval_name] = counts
    return baseline


def _describe_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"  # dates and times


# --- comparing ---------------------------------------------------------------


def compare_tier(
    manifest: Manifest,
    results: RunResults,
    baseline: Mapping[str, Mapping[str, int]] | None,
    *,
    strict: bool,
    update_command: str,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> BaselineComparison:
    """Compare results with their tier's baseline as every command does: the tier's evals
    of the manifest, its baseline file, and the manifest's ``[baseline] strict`` too."""
    tier = results.tier
    moved = {name: other for other in TIERS if other != tier for name in tier_cells(manifest, other)}
    return compare_to_baseline(
        baseline,
        results,
        set(tier_cells(manifest, tier)),
        baseline_path(manifest, tier),
        strict=strict or manifest.baseline.strict,
        update_command=update_command,
        counts=counts,
        settings=gate_settings(manifest, tier),
        moved=moved,
    )


def compare_to_baseline(
    baseline: Mapping[str, Mapping[str, int]] | None,
    results: RunResults,
    tier_eval_names: set[str],
    path: Path,
    strict: bool,
    update_command: str,
    counts: Mapping[str, Mapping[str, int]] | None = None,
    settings: Mapping[str, GateSettings] | None = None,
    moved: Mapping[str, str] | None = None,
) -> BaselineComparison:
    """Diff a run against its tier's baseline.

    ``tier_eval_names`` is every eval of the tier in the manifest, filtered or
    not: a baselined eval missing from it vanished, whatever the filters.
    Only evals whose scorer ran and produced a report (passed or failed) are
    compared; the rest of the tier, including an eval failed before its scorer
    started (a service down, a skip turned failure), is listed in
    ``not_compared``. ``strict`` turns a stale baseline into regressions.
    ``counts`` (from ``load_results_counted``) stands for the checks of the
    evals it names, whose records were not built. ``settings``: the gate
    settings the manifest makes now, compared with the recorded ones (when
    None, none are compared); ``moved``: the tier each eval of another tier is
    in, so a vanished eval that moved says where, and moving to a stricter tier
    is no regression.
    """
    def counts_of_eval(result: EvalResult) -> Mapping[str, int]:
        if counts is not None and result.name in counts:
            return counts[result.name]
        return result.check_counts()

    compared: dict[str, EvalResult] = {}
    not_compared: set[str] = set()
    for result in results.evals:
        if result.status in _COMPARED and not failed_before_scorer(result):
            compared[result.name] = result
        else:
            not_compared.add(result.name)
    in_results = {result.name for result in results.evals}
    not_compared.update(name for name in tier_eval_names if name not in in_results)

    regressions: list[BaselineChange] = []
    stale: list[BaselineChange] = []
    undecided: list[BaselineChange] = []
    known = baseline if baseline is not None else {}
    tier = path.stem
    rejudged = diff_judges(getattr(baseline, "judges", None), compared,
                           sorted(n for n in known if n in compared), stale)
    for name, recorded in known.items():
        if name not in tier_eval_names:
            elsewhere = (moved or {}).get(name)
            if elsewhere is None:
                regressions.append(_vanished_eval(name, recorded))
            else:
                looser, words = tier_move(name, tier, elsewhere)
                change = _change(name, None, "moved-looser" if looser else "moved-stricter", sum(recorded.values()),
                                 None, f"{words} (baseline of {tier}: {_n(len(recorded), 'check')})")
                (regressions if looser else stale).append(change)
            not_compared.discard(name)
        elif name in compared:
            _diff_eval(name, recorded, counts_of_eval(compared[name]), regressions, stale)
            # A check judged by another judge than recorded is not compared by pass rate (evalrun.baseline_judges).
            unjudgeable = {c.name for c in compared[name].checks if c.judge} if name in rejudged else set()
            diff_rates(name, recorded, compared[name], regressions, stale, undecided, skip=unjudgeable)
    for name, result in compared.items():
        if name not in known:
            stale.append(_new_eval(name, counts_of_eval(result)))
    if settings is not None and baseline is not None:
        recorded_settings = getattr(baseline, "settings", None)
        diff_settings(recorded_settings, settings, sorted(n for n in known if n in in_results and n in tier_eval_names),
                      regressions, stale)

    if strict:
        regressions.extend(stale)
        stale = []
    return BaselineComparison(
        path=file_label(path),
        exists=baseline is not None,
        regressions=sorted(regressions, key=_order),
        stale=sorted(stale, key=_order),
        undecided=sorted(undecided, key=_order),
        not_compared=sorted(not_compared),
        strict=strict,
        update_command=update_command,
    )


def failed_before_scorer(result: EvalResult) -> bool:
    """Whether the eval failed before its scorer started, so it has no checks to diff.

    That is a failure decided by the run itself (a service that did not start,
    ``skips = "fail"``): no scorer process, so ``exit_code`` is None (see
    ``evalrun.process.ProcessOutcome``) and there is no report.
    """
    return result.status is Status.FAILED and result.exit_code is None and not result.checks


def _diff_eval(
    name: str,
    old: Mapping[str, int],
    new: Mapping[str, int],
    regressions: list[BaselineChange],
    stale: list[BaselineChange],
) -> None:
    if old == new:
        return  # the common case, decided at C speed: nothing changed
    for check, before in old.items():
        now = new.get(check)
        if now is None:
            regressions.append(
                _change(name, check, "vanished-check", before, None,
                        f"{name}: check {_quote(check)} vanished (baseline: {_n(before, 'assertion')})")
            )
        elif now < before:
            regressions.append(
                _change(name, check, "weakened", before, now,
                        f"{name}: check {_quote(check)} asserts {now} (baseline: {before})")
            )
        elif now > before:
            stale.append(
                _change(name, check, "stronger", before, now,
                        f"{name}: check {_quote(check)} asserts {now} (baseline: {before})")
            )
    for check, now in new.items():
        if check not in old:
            stale.append(
                _change(name, check, "new-check", None, now,
                        f"{name}: new check {_quote(check)} ({_n(now, 'assertion')})")
            )


def _vanished_eval(name: str, counts: Mapping[str, int]) -> BaselineChange:
    total = sum(counts.values())
    return _change(
        name, None, "vanished-eval", total, None,
        f"{name}: eval vanished from the manifest (baseline: {_n(len(counts), 'check')}, {_n(total, 'assertion')})",
    )


def _new_eval(name: str, counts: Mapping[str, int]) -> BaselineChange:
    total = sum(counts.values())
    return _change(
        name, None, "new-eval", None, total,
        f"{name}: new eval, not in the baseline ({_n(len(counts), 'check')}, {_n(total, 'assertion')})",
    )


def _change(eval_name: str, check: str | None, kind: str, baseline: int | None, current: int | None,
            message: str) -> BaselineChange:
    return BaselineChange(eval=eval_name, check=check, kind=kind, baseline=baseline, current=current,
                          message=message)


def _order(change: BaselineChange) -> tuple[str, int, str]:
    # Eval-level changes (check None) sort before that eval's checks.
    return (change.eval, 0 if change.check is None else 1, change.check or "")


# --- updating ----------------------------------------------------------------


def update_baseline(
    old: Mapping[str, Mapping[str, int]] | None,
    results: RunResults,
    tier_eval_names: set[str],
    filtered: bool,
) -> tuple[Baseline, list[str]]:
    """Compute the baseline that ``baseline --update`` records, with notes for the user.

    Refuses (``BaselineRefused``, exit 1) when the run failed or was
    interrupted: a failing state is never a baseline. A passed eval's table is
    rewritten to exactly its checks; a skipped or over-budget eval keeps its
    previous entry. Without filters, baselined evals gone from the manifest are
    dropped; with filters they are kept, since the run did not see the whole tier.
    """
    _refuse_failing_state(results)
    new: Baseline = {name: dict(counts) for name, counts in (old or {}).items()}
    notes: list[str] = []
    for result in sorted(results.evals, key=lambda r: r.name):
        if result.status is Status.PASSED:
            new[result.name] = counts_of(result)  # with pass rates when the eval repeats
        elif result.status in _KEPT:
            reason = "skipped" if result.status is Status.SKIPPED else "stopped by the model budget"
            if result.name in new:
                notes.append(f"kept {_quote(result.name)}: {reason}, not checked this run; previous entry unchanged")
            else:
                notes.append(f"not added {_quote(result.name)}: {reason}, not checked this run")
    for name in sorted(new):
        if name in tier_eval_names:
            continue
        if filtered:
            notes.append(
                f"kept {_quote(name)}: no longer in the manifest, but this run was filtered; "
                f"update without filters to drop it"
            )
        else:
            del new[name]
            notes.append(f"dropped {_quote(name)}: no longer in the manifest")
    return _sorted_baseline(new), notes


def _refuse_failing_state(results: RunResults) -> None:
    offending = sorted((r for r in results.evals if r.status in _REFUSED), key=lambda r: r.name)
    if offending:
        listed = ", ".join(f"{r.name} ({r.status.value})" for r in offending)
        raise BaselineRefused(
            f"baseline not updated: {_n(len(offending), 'eval')} did not pass: {listed}; "
            f"a failing state is never a baseline, fix them and rerun the tier"
        )
    if results.interrupted:
        raise BaselineRefused(
            "baseline not updated: the run was interrupted; rerun the tier to completion, then update"
        )


# --- writing -----------------------------------------------------------------


def write_baseline(
    path: Path, data: Mapping[str, Mapping[str, int]], command: str,
    settings: Mapping[str, GateSettings] | None = None,
    judges: Mapping[str, tuple[str, ...]] | None = None,
) -> None:
    """Write a baseline atomically, sorted so that a pull request's diff shows exactly what changed.

    ``settings`` (each eval's gate settings) are written first, as the ``["/settings"]`` table,
    then ``judges`` (who judged each eval's checks) as the ``["/judges"]`` table.
    """
    header = "# generated by evalrun; update with: " + " ".join(command.split())
    lines = [header]
    if settings:
        lines.append(f"[{_toml_key(SETTINGS_TABLE)}]")
        lines.extend(settings_line(_toml_key(name), settings[name]) for name in sorted(settings))
        if data or judges:
            lines.append("")
    if judges:
        lines.append(f"[{_toml_key(JUDGES_TABLE)}]")
        lines.extend(judges_line(_toml_key(name), tuple(judges[name])) for name in sorted(judges))
        if data:
            lines.append("")
    try:
        raw = "\n".join([*lines, *_written_form(_sorted_baseline(data))]).encode("utf-8") + b"\n"
    except UnicodeEncodeError as exc:
        # Lone surrogates can arrive through JSON reports; TOML cannot hold them.
        bad = exc.object[max(0, exc.start - 20):exc.end + 20] if isinstance(exc.object, str) else ""
        raise BaselineError(
            f"{file_label(path)}: a check or eval name is not valid Unicode (near {bad!r}); "
            f"rename it in the scorer, then {command}"
        ) from None
    write_atomic(path, raw)


def _written_form(data: Baseline) -> Iterator[str]:
    """TOML lines, made directly (keys bare or JSON-quoted, which TOML reads alike): a blank line between tables."""
    for index, (name, counts) in enumerate(data.items()):
        if index:
            yield ""
        yield f"[{_toml_key(name)}]"
        for check, count in counts.items():
            if isinstance(count, RatedCount):  # a repeated eval's entry: assertions and its pass rate
                yield f"{_toml_key(check)} = {{ assertions = {int(count)}, passes = {count.passes}, runs = {count.runs} }}"
            else:
                yield f"{_toml_key(check)} = {int(count)}"


def _toml_key(name: str) -> str:
    if _BARE_KEY.fullmatch(name):
        return name
    # JSON's escapes are TOML's, but for DEL, which TOML wants escaped too.
    return json.dumps(name, ensure_ascii=False).replace("\x7f", "\\u007f")


def _sorted_baseline(data: Mapping[str, Mapping[str, int]]) -> Baseline:
    return {name: dict(sorted(data[name].items())) for name in sorted(data)}


# --- formatting --------------------------------------------------------------


def format_comparison(
    cmp: BaselineComparison,
    evals: Iterable[EvalResult] = (),
    run_failed: bool = False,
    selection: Mapping[str, Any] | None = None,
) -> list[str]:
    """Plain terminal lines: regressions, then the stale note, then what was not compared.

    ``evals`` (the run's results) lets each eval that ran but was not compared
    say why, one line each (it crashed, timed out, was skipped, failed before
    its scorer started); ``selection`` (the results file's) names the filters
    that left the others out. A failed run is never suggested as a baseline:
    ``baseline --update`` would refuse it.
    """
    run = f"once every eval passes, run: {cmp.update_command}" if run_failed else f"run: {cmp.update_command}"
    lines = [f"regression: {change.message}" for change in cmp.regressions]
    if any(change.kind in ("loosened", "moved-looser") for change in cmp.regressions):
        lines.append(f"a looser gate must be committed in the baseline, for review; if it is meant, {run}")
    if cmp.strict and any(change.kind in _STALE_KINDS for change in cmp.regressions):
        lines.append(f"baseline is strict: new checks and higher counts must be committed; {run}")
    if not cmp.exists:
        create = f"once every eval passes, create it with: {cmp.update_command}" if run_failed else f"create it with: {cmp.update_command}"
        lines.append(f"no baseline at {cmp.path}; {create}")
    elif cmp.stale:
        lines.append(f"baseline is stale: {_summarize_stale(cmp.stale)}; {run}")
        lines.extend(f"  {change.message}" for change in cmp.stale)
    for change in cmp.undecided:
        lines.append(f"{'unchecked' if change.fails else 'note'}: {change.message}")
    ran = {r.name: r for r in evals}
    filtered = set((selection or {}).get("filtered_out") or [])
    left_out: list[str] = []
    unknown: list[str] = []
    for name in cmp.not_compared:
        if name in ran:
            lines.append(f"not compared: {name} {_why_not_compared(ran[name])}")
        elif name in filtered:
            left_out.append(name)
        else:
            unknown.append(name)
    if left_out:
        lines.append(f"not compared: {', '.join(left_out)}: left out by {_describe_selection(selection or {})}")
    if unknown:
        lines.append(f"not compared: {', '.join(unknown)}" + (": not in this run" if evals else ""))
    return lines


def _why_not_compared(result: EvalResult) -> str:
    """``crashed (exit 3: ...)``: why an eval that was in the run has no checks to diff, in one line."""
    detail = f" ({one_line(result.message, 300)})" if result.message else ""
    if failed_before_scorer(result):
        return f"failed before its scorer started{detail}"
    words = {
        Status.ERROR: "errored",
        Status.TIMEOUT: "timed out",
        Status.SKIPPED: "was skipped",
        Status.INTERRUPTED: "was interrupted",
        Status.BUDGET: "was stopped by the model budget",
    }
    return f"{words.get(result.status, result.status.value)}{detail}"


def _describe_selection(selection: Mapping[str, Any]) -> str:
    """``--eval a --experiment m``: the filters of a run, as typed."""
    flags = (("evals", "--eval"), ("tags", "--tag"), ("experiments", "--experiment"),
             ("changed_since", "--changed-since"), ("shard", "--shard"))
    parts = []
    for key, flag in flags:
        value = selection.get(key)
        for item in value if isinstance(value, list) else [value] if value else []:
            parts.append(f"{flag} {item}")
    return "this run's filters" + (f" ({' '.join(parts)})" if parts else "")


def _summarize_stale(stale: Iterable[BaselineChange]) -> str:
    kinds = [change.kind for change in stale]
    words = {"new-check": ("new check", "new checks"), "stronger": ("stronger check", "stronger checks"),
             "new-eval": ("new eval", "new evals"),
             "improved": ("check passing more often", "checks passing more often"),
             "new-rate": ("check with a pass rate to record", "checks with pass rates to record"),
             "new-settings": ("eval whose gate settings are not recorded yet", "evals whose gate settings are not recorded yet"),
             "tightened": ("tightened gate", "tightened gates"),
             "moved-stricter": ("eval moved to a stricter tier", "evals moved to a stricter tier"),
             "judge-changed": ("eval judged by another judge", "evals judged by another judge")}
    parts = []
    for kind in ("new-check", "stronger", "improved", "new-rate", "new-eval", "new-settings", "tightened", "moved-stricter",
                 "judge-changed"):
        count = kinds.count(kind)
        if count:
            singular, plural = words[kind]
            parts.append(f"{count} {singular if count == 1 else plural}")
    return ", ".join(parts)


# --- words -------------------------------------------------------------------


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _quote(text: str) -> str:
    # JSON's escaping keeps odd names (quotes, newlines) on one line, readably.
    return json.dumps(text, ensure_ascii=False)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _table_key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _quote(name)


