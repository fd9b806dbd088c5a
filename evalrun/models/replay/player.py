"""Replay mode's choice: which recording answers a replayed call, or why none may.

For a call that arrives as the k-th of its session, with request digest d
(``evalrun.models.replay.matching``):

1. the unplayed fixture k, when it was recorded for an equal request (or when
   the suite matches by index alone: ``[models] replay_match = "index"``);
2. else the first unplayed fixture of the same session recorded for an equal
   request: calls made concurrently may arrive in another order than when
   recorded, and each still gets its own answer;
3. else none: the call fails loudly. If an unplayed fixture was recorded for
   the same method and path, the message shows what changed in the request
   (which message, which field) and names that fixture: re-record. If not,
   the fixture is missing.

A fixture that cannot be read fails the call that needed it, like a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalrun.errors import file_label
from evalrun.models.replay.fixtures import Fixture, FixtureError, fixture_path, read_fixture
from evalrun.models.replay.matching import describe_difference, request_digest
from evalrun.models.replay.state import EvalState

Match = Literal["request", "index"]
MATCHES: tuple[str, ...] = ("request", "index")
def _rerecord(state: EvalState) -> str:
    return f"re-record with `{state.record_command}`"


def _record_hint(state: EvalState) -> str:
    return f"record it with `{state.record_command}`, or make the code call the model as it did when recorded"


@dataclass(frozen=True)
class Refusal:
    """A call no recording may answer: the status, the error kind, the one-line message."""

    status: int
    kind: str
    message: str
    key: tuple[str, int] | None  # the fixture the message is about, now counted as requested
    missing: Path | None = None  # the fixture file this call needed and that is not there


@dataclass(frozen=True)
class Call:
    """A replayed call as compared: where it stands in its session and what it asks."""

    session: str
    index: int
    method: str
    path: str
    body: Any
    body_sha256: str | None

    @property
    def digest(self) -> str:
        return request_digest(self.method, self.path, self.body, self.body_sha256)


def choose(state: EvalState, call: Call, match: Match) -> Fixture | Refusal:
    """The fixture that answers ``call``, marked played; or the refusal that fails the eval."""
    assert state.fixtures_dir is not None
    digest = call.digest
    with state.lock:
        listing = state.by_session.get(call.session, {})
        own = (call.session, call.index)
        if call.index in listing and own not in state.served:
            got = _load(state, call.session, call.index, listing[call.index])
            if isinstance(got, FixtureError):
                state.served.add(own)
                return Refusal(400, "evalrun_bad_fixture", f"evalrun replay: {got}", own)
            fixture, recorded = got
            if recorded == digest or (match == "index" and _same_route(fixture, call)):
                state.served.add(own)
                return fixture
        # The slow path: the call is not its own recording's (another order, a retry, a change).
        unplayed = [i for i in sorted(listing) if (call.session, i) not in state.served]
        if match == "request":
            for i in unplayed:
                got = _load(state, call.session, i, listing[i])
                if not isinstance(got, FixtureError) and got[1] == digest:
                    state.served.add((call.session, i))
                    return got[0]
        near = _nearest(state, call, listing, unplayed)
    label = f"call {call.index} of session {call.session!r} ({call.method} {call.path.split('?', 1)[0]})"
    expected = fixture_path(state.fixtures_dir, call.session, call.index)
    own_missing = call.index not in listing
    if near is not None:
        what = describe_difference(
            (near.method, near.path, near.request.body, near.request.body_sha256),
            (call.method, call.path, call.body, call.body_sha256),
        )
        if own_missing:  # the call's own recording is the news; the nearest other one is context
            return Refusal(
                404, "evalrun_missing_fixture",
                f"evalrun replay: missing fixture {file_label(expected)} ({label}); the nearest unplayed "
                f"recording, {file_label(near.file)}, does not match it either: {what}; {_rerecord(state)}",
                (call.session, near.index),  # named here, so not also listed as unplayed
                missing=expected,
            )
        return Refusal(
            400, "evalrun_fixture_mismatch",
            f"evalrun replay: {label} does not match its recording {file_label(near.file)}: {what}; "
            f"the request changed since it was recorded: {_rerecord(state)}",
            (call.session, near.index),  # named here, so not also listed as unplayed
        )
    if not own_missing:
        why = f"{label} matches no unplayed recording of its session (its own, {file_label(expected)}, was already played)"
    else:
        why = f"missing fixture {file_label(expected)} ({label})"
    return Refusal(
        404, "evalrun_missing_fixture",
        f"evalrun replay: {why}; {_record_hint(state)}",
        own,
        missing=expected if own_missing else None,
    )


def _load(state: EvalState, session: str, index: int, path: Path) -> tuple[Fixture, str] | FixtureError:
    key = (session, index)
    if key not in state.loaded:
        try:
            fixture = read_fixture(path)
            state.loaded[key] = (fixture, request_digest(
                fixture.method, fixture.path, fixture.request.body, fixture.request.body_sha256
            ))
        except FixtureError as exc:
            state.loaded[key] = exc
    return state.loaded[key]


def _same_route(fixture: Fixture, call: Call) -> bool:
    return fixture.method == call.method and fixture.path.split("?", 1)[0] == call.path.split("?", 1)[0]


def _nearest(state: EvalState, call: Call, listing: dict[int, Path], unplayed: list[int]) -> Fixture | None:
    """The recording a changed request most likely stands for: its own index, else the first of its route."""
    if call.index in unplayed:
        got = _load(state, call.session, call.index, listing[call.index])
        if not isinstance(got, FixtureError):
            return got[0]
    for i in unplayed:
        got = _load(state, call.session, i, listing[i])
        if not isinstance(got, FixtureError) and _same_route(got[0], call):
            return got[0]
    return None
