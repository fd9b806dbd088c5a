"""The scorer contract's native JSON report: its model, its published schema, reading it.

This module owns the report's pydantic model (from which the published
``report.schema.json`` is generated) and reading a report file into a
``ParsedReport``; the rules applied to any report live in
``evalrun.reports_in.rules``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrun.errors import ReportError
from evalrun.reports_in.parsed import ParsedReport
from evalrun.results import CheckResult

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "report.schema.json"


class ReportCheck(BaseModel):
    """One check as a scorer reports it."""

    model_config = ConfigDict(extra="forbid", title="Check")

    name: str = Field(min_length=1, description="Unique within the report; used in baselines.")
    assertions: int = Field(ge=0, description="How many assertions the check made. Zero fails the check.")
    passed: bool
    message: str | None = Field(default=None, description="Why it failed, in one line.")
    evidence: str | None = Field(default=None, description="What the scorer saw, for diagnosis.")


class Report(BaseModel):
    """The JSON report a scorer writes to $EVALRUN_REPORT."""

    model_config = ConfigDict(extra="forbid", title="evalrun scorer report")

    checks: list[ReportCheck]
    metrics: dict[str, float | int | str | bool] = Field(
        default_factory=dict, description="Recorded and shown, never asserted."
    )
    running: str | None = Field(
        default=None,
        description="The check in progress when the report was written (the SDK sets it as a check starts); "
        "named in the result if the scorer is stopped there.",
    )


def generate_report_schema() -> dict[str, Any]:
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


def read_json_report(path: Path) -> ParsedReport:
    """Read and validate a JSON report; ReportError says precisely what is wrong."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ReportError("no report was written to $EVALRUN_REPORT") from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportError(f"invalid report: not JSON ({exc})") from None
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ReportError(f"invalid report: {where or 'top level'}: {err.message}{more}")
    checks = [CheckResult(**c) for c in data["checks"]]
    return ParsedReport(checks=checks, metrics=dict(data.get("metrics", {})), running=data.get("running"))
