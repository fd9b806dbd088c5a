"""``evalrun schema report|manifest|results``: print a published JSON Schema.

The schemas are committed under ``evalrun/schemas/`` (generated from the
pydantic models; a test fails when a committed one is stale and says how to
regenerate it: ``python -m evalrun.commands.schema --write``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from evalrun.errors import UsageError

SCHEMAS = ("report", "manifest", "results")
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schemas"


def schema_path(name: str) -> Path:
    return SCHEMA_DIR / f"{name}.schema.json"


def generate_schema(name: str) -> dict[str, Any]:
    if name == "report":
        from evalrun.reports_in.json_report import generate_report_schema

        return generate_report_schema()
    if name == "manifest":
        from evalrun.manifest import manifest_schema

        schema = manifest_schema()
    elif name == "results":
        from evalrun.results import results_schema

        schema = results_schema()
    else:
        raise UsageError(f"unknown schema {name!r}; use one of {', '.join(SCHEMAS)}")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def render_schema(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def schema(name: str) -> int:
    if name not in SCHEMAS:
        raise UsageError(f"unknown schema {name!r}; use one of {', '.join(SCHEMAS)}")
    sys.stdout.write(schema_path(name).read_text(encoding="utf-8"))
    return 0


def write_schemas() -> None:
    from evalrun.atomic import write_atomic

    for name in SCHEMAS:
        write_atomic(schema_path(name), render_schema(generate_schema(name)))


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write_schemas()
