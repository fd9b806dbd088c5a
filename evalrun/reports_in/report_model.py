"""The scorer's JSON report as a pydantic model: the published ``report.schema.json`` is generated from it.

A run reads reports without it (``evalrun.reports_in.json_report``: plain Python for a report of the schema's own
types), so it is imported only to write or test the schema, or to validate a report plain Python cannot take: with
the same model as TypedDicts (``_ReportShape``, held equal to ``Report`` by a test).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from typing_extensions import NotRequired, TypedDict  # pydantic reads typing_extensions' TypedDict on 3.11

from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, NAME_LIMIT
from evalrun.results import JUDGE_ID
from evalrun.text import EVIDENCE_LIMIT, MESSAGE_LIMIT

JUDGE_PATTERN = f"^{JUDGE_ID}$"


# ``ReportCheck`` and ``Report`` are the published schema (``evalrun schema report``); they build their validators
# only when first used (``defer_build``).
class ReportCheck(BaseModel):
    """One check as a scorer reports it."""

    model_config = ConfigDict(extra="forbid", title="Check", defer_build=True)

    name: str = Field(
        min_length=1, max_length=NAME_LIMIT, description="Unique within the report; used in baselines."
    )
    assertions: int = Field(
        ge=0, le=ASSERTIONS_LIMIT, description="How many assertions the check made. Zero fails the check."
    )
    passed: bool
    message: str | None = Field(
        default=None, description=f"Why it failed, in one line; kept up to {MESSAGE_LIMIT} characters."
    )
    evidence: str | None = Field(
        default=None, description=f"What the scorer saw, for diagnosis; kept up to {EVIDENCE_LIMIT} bytes."
    )
    judge: str | None = Field(
        default=None, pattern=JUDGE_PATTERN,
        description="Who judged this check, when a model did: the model asked and a hash of its prompt and rubric "
        "(MODEL#HASH, the SDK's judge() sets it); a judge swap is reported, not compared as a product change.",
    )


class Report(BaseModel):
    """The JSON report a scorer writes to $EVALRUN_REPORT."""

    model_config = ConfigDict(extra="forbid", title="evalrun scorer report", defer_build=True)

    checks: list[ReportCheck]
    metrics: dict[Annotated[str, StringConstraints(max_length=NAME_LIMIT)], float | int | str | bool] = Field(
        default_factory=dict, description="Recorded and shown, never asserted."
    )
    running: str | None = Field(
        default=None,
        description="The check in progress when the report was written (the SDK sets it as a check starts); "
        "named in the result if the scorer is stopped there.",
    )


# ``Report`` as TypedDicts: validating into dicts builds no model per check, five times
# faster at 2,000 checks. A test keeps the two accepting exactly the same.
class _CheckShape(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    name: Annotated[str, StringConstraints(min_length=1, max_length=NAME_LIMIT)]
    assertions: Annotated[int, Field(ge=0, le=ASSERTIONS_LIMIT)]
    passed: bool
    message: NotRequired[str | None]
    evidence: NotRequired[str | None]
    judge: NotRequired[Annotated[str, StringConstraints(pattern=JUDGE_PATTERN)] | None]


class _ReportShape(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]

    checks: list[_CheckShape]
    metrics: NotRequired[dict[Annotated[str, StringConstraints(max_length=NAME_LIMIT)], float | int | str | bool]]
    running: NotRequired[str | None]
