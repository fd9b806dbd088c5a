"""The scorer contract's native JSON report: reading it, and its published schema.

This module reads a report file into a ``ParsedReport``; the report's pydantic
model (from which the published ``report.schema.json`` is generated) is in
``evalrun.reports_in.report_model``, imported only to write or test the schema.
The rules applied to any report live in ``evalrun.reports_in.rules``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import islice
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from evalrun.errors import ReportError
from evalrun.files import FileReadError, read_bounded
from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, CHECK_LIMIT, NAME_LIMIT, REPORT_LIMIT, REPORT_WHAT, ParsedReport
from evalrun.results import JUDGE_ID, CheckResult
from evalrun.secrets import scrub
from evalrun.text import EVIDENCE_LIMIT, MESSAGE_LIMIT, cut, one_line, shorten, truncate

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "report.schema.json"


@lru_cache(maxsize=1)
def _report_shape() -> TypeAdapter[Any]:
    """The validator of ``report_model._ReportShape``: built (and the shape defined) only for a report ``_fits``
    cannot take."""
    from evalrun.reports_in.report_model import _ReportShape

    return TypeAdapter(_ReportShape)


def generate_report_schema() -> dict[str, Any]:
    from evalrun.reports_in.report_model import Report

    schema = Report.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://evalrun.invalid/schemas/report.schema.json"
    return schema


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema  # heavy: imported only when a report is read

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    # The same schema with its local $refs inlined: equal in meaning, and about
    # twice as fast to check, since no reference is resolved per report.
    return cls(_inline_refs(schema, schema.get("$defs", {})))


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and len(node) == 1:
            return _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


def read_json_report(path: Path, secrets: Iterable[str] = ()) -> ParsedReport:
    """Read and validate a JSON report; ReportError says precisely what is wrong, in one line.

    Nothing in the file can do more than fail this eval: the read is bounded
    (``evalrun.files``), any JSON that Python cannot hold (too deep, a number of
    thousands of digits, NaN) is an invalid report, and messages, evidence and
    string metrics are scrubbed of ``secrets`` and then cut, saying so.
    """
    try:
        raw = read_bounded(path, REPORT_LIMIT, REPORT_WHAT)
    except FileReadError as exc:
        if exc.missing:
            raise ReportError("no report was written to $EVALRUN_REPORT") from None
        raise ReportError(f"invalid report: $EVALRUN_REPORT {exc.reason}") from None
    data = _load(raw)
    if _SURROGATE_ESCAPE.search(raw):  # rare: only a \\uD800-\\uDFFF escape makes text no file can hold
        data = _representable(data)
    if isinstance(data, dict) and isinstance(data.get("checks"), list) and len(data["checks"]) > CHECK_LIMIT:
        count = len(data["checks"])
        raise ReportError(f"invalid report: checks: {count:,} checks, more than the {CHECK_LIMIT:,} evalrun reads")
    try:
        _check_shape(data)
    except RecursionError:
        raise ReportError("invalid report: nested too deeply to check") from None
    secrets = [s for s in secrets if s]
    name = (lambda text: scrub(text, secrets)) if secrets else (lambda text: text)
    # The shape was checked above: the records are built as they are, with no validator (CheckResult is a dataclass).
    checks = [
        # A check with no text to redact or cut is taken as it is: most checks of a large report.
        CheckResult(**c) if not secrets and c.get("message") is None and c.get("evidence") is None
        and type(c["assertions"]) is int else CheckResult(
            name=name(c["name"]),
            assertions=int(c["assertions"]),  # the schema allows 3.0 for 3
            passed=c["passed"],
            message=_cut(c.get("message"), secrets, MESSAGE_LIMIT),
            evidence=_cut(c.get("evidence"), secrets, EVIDENCE_LIMIT),
            judge=c.get("judge"),
        )
        for c in data["checks"]
    ]
    metrics = {
        name: _cut(value, secrets, MESSAGE_LIMIT) if isinstance(value, str) else value
        for name, value in data.get("metrics", {}).items()
    }
    running = data.get("running")
    running = scrub(running, secrets)[:NAME_LIMIT] if isinstance(running, str) else None
    return ParsedReport(checks=checks, metrics=metrics, running=running)


_ERRORS_SHOWN = 50  # schema errors collected at most: a report of a million bad checks is one line too


def _check_shape(data: Any) -> None:
    """Raise ReportError naming the first schema violation, if any.

    A report of exactly the schema's types (what scorers write) passes ``_fits``, plain Python, and no validator
    is built. Otherwise the fast path is the pydantic model the published schema is generated from,
    as ``TypedDict``s (``report_model._ReportShape``: the same constraints, no model objects
    built) in strict mode (a 2,000-check report in about a millisecond, where
    jsonschema takes tens of ms); strict mode accepts no more than the schema does. Only a report it
    refuses goes to jsonschema, whose verdict decides and whose message names the
    place (``checks[0].assertions: 'two' is not of type 'integer'``).
    """
    if _fits(data):
        return
    try:
        _report_shape().validate_python(data, strict=True)
        return
    except ValidationError:
        pass
    errors = list(islice(_validator().iter_errors(data), _ERRORS_SHOWN + 1))
    if errors:
        raise ReportError(_describe(errors))


_CHECK_KEYS = frozenset({"name", "assertions", "passed", "message", "evidence", "judge"})
_REPORT_KEYS = frozenset({"checks", "metrics", "running"})
_JUDGE = re.compile(JUDGE_ID)  # fullmatch: JUDGE_PATTERN's ^...$ without Python's "$ before a final newline"
_METRIC_TYPES = (float, int, str, bool)


def _fits(data: Any) -> bool:
    """Whether ``data`` is a report of exactly the schema's types, checked in plain Python: what a scorer writes.

    True only where ``report_model._ReportShape`` in strict mode accepts too (a Hypothesis test holds the two to
    that), so a run whose reports all fit never builds that validator (about 2 ms of every run's start), nor loads
    that module; anything else, a refusal included, is left to the validator and then jsonschema, as before.
    """
    if type(data) is not dict or "checks" not in data or not data.keys() <= _REPORT_KEYS:
        return False
    checks, metrics, running = data["checks"], data.get("metrics", {}), data.get("running")
    if type(checks) is not list or type(metrics) is not dict or not (running is None or type(running) is str):
        return False
    for check in checks:
        if type(check) is not dict or not check.keys() <= _CHECK_KEYS:
            return False
        name, assertions, judge = check.get("name"), check.get("assertions"), check.get("judge")
        if (type(name) is not str or not 0 < len(name) <= NAME_LIMIT
                or type(assertions) is not int or not 0 <= assertions <= ASSERTIONS_LIMIT
                or type(check.get("passed")) is not bool
                or not all(type(check.get(key)) in (str, type(None)) for key in ("message", "evidence"))
                or not (judge is None or (type(judge) is str and _JUDGE.fullmatch(judge)))):
            return False
    return all(type(key) is str and len(key) <= NAME_LIMIT and type(value) in _METRIC_TYPES
               for key, value in metrics.items())


def _load(raw: bytes) -> Any:
    try:
        return json.loads(raw, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise ReportError("invalid report: nested too deeply to read") from None
    except _NotFinite as exc:
        raise ReportError(f"invalid report: {exc} is not a finite number") from None
    except (ValueError, UnicodeDecodeError) as exc:
        # int() refuses numbers of thousands of digits (ValueError), as it should.
        text = str(exc)
        if "integer string conversion" in text:
            text = "a number has more digits than Python reads (4300)"
        raise ReportError(f"invalid report: not JSON ({shorten(one_line(text), 200)})") from None


class _NotFinite(ValueError):
    pass


# JSON's "\ud800" is valid JSON and a lone surrogate, which no UTF-8 file (results, baseline, history) can hold.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _representable(data: Any) -> Any:
    """The report with lone surrogates made U+FFFD; ReportError for a check name holding one.

    A name is the baseline's key: changed here it would be another check, so the
    report is refused, naming the check. Any other text shows U+FFFD, as a decoder
    shows a byte it cannot read.
    """
    if isinstance(data, dict) and isinstance(data.get("checks"), list):
        for index, check in enumerate(data["checks"]):
            name = check.get("name") if isinstance(check, dict) else None
            found = _SURROGATE.search(name) if isinstance(name, str) else None
            if found is not None:
                raise ReportError(
                    f"invalid report: checks[{index}].name {shorten(ascii(name), 80)} is not valid Unicode "
                    f"(a lone surrogate \\u{ord(found.group()):04x} at character {found.start() + 1}); "
                    "name checks with text UTF-8 can hold"
                )
    try:
        return _replaced(data)
    except RecursionError:
        raise ReportError("invalid report: nested too deeply to read") from None


def _replaced(node: Any) -> Any:
    if isinstance(node, str):
        return _SURROGATE.sub("\ufffd", node)
    if isinstance(node, list):
        return [_replaced(v) for v in node]
    if isinstance(node, dict):
        return {_replaced(k): _replaced(v) for k, v in node.items()}
    return node


def _refuse_constant(name: str) -> Any:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(shorten(text, 40))
    return value


def _describe(errors: list[Any]) -> str:
    # Paths under one container share its key type, but sort int before str anyway:
    # comparing 0 with "a" would raise.
    errors.sort(key=lambda e: [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in e.absolute_path])
    err = errors[0]
    where = "".join(_step(p) for p in err.absolute_path).lstrip(".")
    if len(errors) > _ERRORS_SHOWN:
        more = " (and more)"
    elif len(errors) > 1:
        more = f" (and {len(errors) - 1} more)"
    else:
        more = ""
    # jsonschema's message quotes the offending value whole: cut it.
    return f"invalid report: {shorten(where, 200) or 'top level'}: {shorten(one_line(err.message), 300)}{more}"


def _step(part: int | str) -> str:
    """One step of a path in a message: ``[0]``, ``.name``, or a quoted key that is no plain word."""
    if isinstance(part, int):
        return f"[{part}]"
    return f".{part}" if _WORD.fullmatch(part) else f"[{json.dumps(shorten(part, 60))}]"


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _cut(text: str | None, secrets: Iterable[str], limit: int) -> str | None:
    if text is None:
        return None
    clean = scrub(text, secrets)
    return cut(clean, limit) if limit == MESSAGE_LIMIT else truncate(clean, limit)
