"""What a model eval's run would meet, without starting the proxy: for ``evalrun dry``.

Per planned eval that uses models: the mode its tier runs it in (t2 replay, t3
live, or record with ``--record``), the fixtures folder and session it plays or
records (another eval's with ``fixtures_for``, an experiment's ``@<name>``
folder), how many calls are recorded there (for its default session, and for
the sessions its calls may name with ``X-Evalrun-Session``), whether the same session is
recorded only for another experiment (or without one), how many recordings the
last run of the tier left unplayed, and where record and live calls go.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalrun.manifest import Manifest
from evalrun.run.model_calls import fixtures_dir, upstreams_for_eval, upstreams_for_run
from evalrun.models.replay.fixtures import list_fixtures, list_session
from evalrun.models.fixture_state import FixtureState
from evalrun.models.upstreams import Upstream
from evalrun.plan import PlannedEval

UNPLAYED_NOTE = "was recorded but not requested"  # the words of a replayed eval's note (models.replay.state)


def fixture_state(
    manifest: Manifest, planned: PlannedEval, environ: Mapping[str, str], last_messages: Mapping[str, str]
) -> FixtureState:
    """The state of ``planned``'s fixtures; ``last_messages`` maps eval names to the last run's messages."""
    spec = planned.spec
    owner = spec.fixtures_for or spec.name
    owner_spec = next((e for e in manifest.evals if e.name == owner), spec)
    base = manifest.eval_dir(owner_spec) / "fixtures"
    folder = fixtures_dir(manifest.eval_dir(owner_spec), planned.experiment)
    session = owner
    named = _sessions(folder)
    recorded = named.pop(session, 0)
    elsewhere: list[tuple[str, int]] = []
    candidates = [base, *sorted(p for p in base.glob("@*") if p.is_dir())] if base.is_dir() else []
    for other in candidates:
        if other != folder:
            count = sum(_sessions(other).values()) if not recorded and not named else len(list_session(other, session))
            if count:
                elsewhere.append((other.name if other != base else "fixtures", count))
    message = last_messages.get(planned.name)
    recorders = tuple(
        e.name for e in manifest.evals if e.tier == "t3" and manifest.uses_model(e) and (e.fixtures_for or e.name) == owner
    )
    return FixtureState(
        mode="replay" if spec.tier == "t2" else "live",
        folder=folder,
        session=session,
        owner=owner,
        recorded=recorded,
        named=tuple(sorted(named.items())),
        elsewhere=tuple(elsewhere),
        unplayed=message.count(UNPLAYED_NOTE) if message is not None else None,
        upstreams=_upstreams(manifest, planned, environ) if spec.tier == "t3" else {},
        recorders=recorders,
    )


def _upstreams(manifest: Manifest, planned: PlannedEval, environ: Mapping[str, str]) -> dict[str, Upstream]:
    """Where the eval's live and record calls go, per provider, and where each was set."""
    return upstreams_for_eval(manifest, upstreams_for_run(manifest, environ), planned)


def _sessions(folder: Path) -> dict[str, int]:
    """Calls recorded per session folder of ``folder`` (not its ``@<experiment>`` folders)."""
    counts: dict[str, int] = {}
    for (session, _index) in list_fixtures(folder):
        counts[session] = counts.get(session, 0) + 1
    return counts
