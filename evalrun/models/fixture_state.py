"""What a model eval's run would meet, as a record (``evalrun dry`` shows it; ``evalrun.run.fixtures`` works it out)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalrun.models.upstreams import Upstream


@dataclass(frozen=True)
class FixtureState:
    mode: str  # "replay" (t2) or "live" (t3; "record" with --record)
    folder: Path  # the fixtures folder of the eval's column
    session: str  # the session its calls without an X-Evalrun-Session header play or record
    owner: str  # the eval whose fixtures these are (itself, or its fixtures_for)
    recorded: int  # calls recorded for that session
    named: tuple[tuple[str, int], ...]  # (session, calls): other sessions in the folder, played when its calls name them
    elsewhere: tuple[tuple[str, int], ...]  # (folder label, calls): the same session recorded for other columns
    unplayed: int | None  # recordings the last run of the tier did not request (None: no such run)
    upstreams: Mapping[str, Upstream]  # where live and record calls go, per provider (t3; empty in t2)
    recorders: tuple[str, ...]  # t3 evals that record these fixtures (fixtures_for, or the eval itself)
