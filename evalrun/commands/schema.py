"""``evalrun schema report|manifest|results``: print a published JSON Schema."""

from __future__ import annotations

import json
import sys

from evalrun.errors import UsageError

SCHEMAS = ("report", "manifest", "results")


def generate_schema(name: str) -> dict:
    if name == "report":
        from evalrun.report import generate_report_schema

        return generate_report_schema()
    if name == "manifest":
        from evalrun.manifest import manifest_schema

        return manifest_schema()
    if name == "results":
        from evalrun.results import results_schema

        return results_schema()
    raise UsageError(f"unknown schema {name!r}; use one of {', '.join(SCHEMAS)}")


def schema(name: str) -> int:
    from evalrun.report import SCHEMA_PATH

    if name == "report":
        # The committed file is what scorers validate against; print exactly it.
        sys.stdout.write(SCHEMA_PATH.read_text(encoding="utf-8"))
    else:
        sys.stdout.write(json.dumps(generate_schema(name), indent=2, sort_keys=True) + "\n")
    return 0
