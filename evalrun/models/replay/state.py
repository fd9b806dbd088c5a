"""Per-eval accounting of the proxy: counters, findings, and the report the runner reads.

This module owns ``ProxyEvalReport``, the record of what one eval did with the
model (calls, tokens, provider, models that answered, missing and unplayed
fixtures, budget), and the thread-safe state the proxy keeps while the eval runs.

Fixtures belong to their eval: an eval owns its default session (its own name,
or the name given by ``fixtures_for``) and every session its requests named
(``X-Evalrun-Session``). Only owned sessions are played, listed as unplayed,
or advised for deletion; other evals sharing the folder are left alone.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.errors import file_label
from evalrun.models.replay.budget import BudgetLimits, BudgetMeter
from evalrun.models.replay.fixtures import default_session, list_fixtures
from evalrun.models.replay.usage import CallUsage

RECORD_COMMAND = "evalrun t3 --record"  # without a t3 eval to name; evalrun.run.model_calls names it
JUDGE_SESSION = "judge"  # the session the scorer SDK's judge() calls name (evalrun.scorer.judging)


@dataclass(frozen=True)
class ProxyEvalReport:
    """What one eval did with the model: for its results record and its verdict."""

    eval: str
    mode: str
    calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    providers: tuple[str, ...]
    models: tuple[str, ...]  # from the responses' "model" field, not from the requests
    missing: tuple[str, ...]  # calls that got no answer: missing or unusable fixture, unreachable upstream
    unplayed: tuple[str, ...]  # fixtures recorded but not requested
    budget_hit: bool  # a call of this eval was refused by the budget
    budget_message: str | None = None
    answered_by: tuple[tuple[str, str], ...] = ()  # (provider, model) pairs
    judge_calls: int = 0  # calls of the judge session: counted above too, their models listed apart
    judge_models: tuple[str, ...] = ()
    cost: dict[str, Any] | None = None  # {"usd", "unpriced_calls", "unpriced_models"} when prices are known
    # The calls whose own fixture file is not there: (file, the message of ``missing`` that says so).
    missing_fixtures: tuple[tuple[Path, str], ...] = ()
    call_log: tuple[dict[str, Any], ...] = ()  # each call in order, compact (evalrun.models.transcript)
    calls_not_kept: int = 0  # calls beyond the log's bound: counted above, not kept
    uncounted_calls: int = 0  # answered streams that reported no usage even when asked: their tokens are unknown

    @property
    def provider(self) -> str | None:
        return ", ".join(self.providers) or None

    def failures(self, strict_replay: bool = False) -> list[str]:
        """The messages that fail the eval: every missing fixture, and unplayed ones when strict."""
        return list(self.missing) + (list(self.unplayed) if strict_replay else [])

    def as_record(self) -> dict[str, Any]:
        """The ``models`` field of the eval's results record."""
        return {
            "mode": self.mode,
            "provider": self.provider,
            "models": list(self.models),
            "by_provider": {p: sorted(m for q, m in self.answered_by if q == p) for p in sorted({q for q, _ in self.answered_by})},
            "calls": self.calls,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens, "total": self.total_tokens},
            **({"judge": {"calls": self.judge_calls, "models": list(self.judge_models)}} if self.judge_calls else {}),
            **({"cost": dict(self.cost)} if self.cost is not None else {}),
            **({"call_log": list(self.call_log)} if self.call_log else {}),
            **({"calls_not_kept": self.calls_not_kept} if self.calls_not_kept else {}),
            **({"uncounted_calls": self.uncounted_calls} if self.uncounted_calls else {}),
        }


class EvalState:
    """The counters and findings of one registered eval; every field is guarded by ``lock``."""

    def __init__(
        self, name: str, fixtures_dir: Path | None, budget: BudgetLimits | None, session: str | None = None
    ) -> None:
        self.name = name
        self.fixtures_dir = fixtures_dir
        self.session = session or default_session(name)  # the session of calls that name none
        self.record_command = RECORD_COMMAND  # what writes its fixtures: the t3 eval that records them, named
        self.owned: set[str] = {self.session}
        self.answered_by: set[tuple[str, str]] = set()
        self.loaded: dict[tuple[str, int], Any] = {}  # replay: a Fixture or the FixtureError of each file read
        self.repeat: int | None = None  # one run of a repeated eval: its sessions get ".r<repeat>" (not run 0)
        self.meter = BudgetMeter(budget, f"eval {name!r} budget")  # without limits it only counts
        self.column_meter: BudgetMeter | None = None  # its experiment's budget, shared with the column
        self.lock = threading.Lock()
        self.next_index: dict[str, int] = {}
        self.served: set[tuple[str, int]] = set()
        # On disk when the eval registered: what the report lists as unplayed if never requested.
        self.existing = list_fixtures(fixtures_dir) if fixtures_dir is not None else {}
        self.by_session: dict[str, dict[int, Path]] = {}  # the same, per session: replay looks up one call's
        for (session_name, index), path in self.existing.items():
            self.by_session.setdefault(session_name, {})[index] = path
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.total_tokens = 0
        self.providers: set[str] = set()
        self.models: set[str] = set()
        self.missing: list[str] = []
        self.missing_fixtures: list[tuple[Path, str]] = []
        self.call_log: list[dict[str, Any]] = []
        self.calls_seen = 0  # every call logged or not: the log keeps the first MAX_CALLS
        self.budget_message: str | None = None
        self.judge_calls = 0
        self.judge_models: set[str] = set()
        self.usd = 0.0
        self.unpriced_calls = 0
        self.unpriced_models: set[str] = set()
        self.uncounted_calls = 0  # streams that reported no usage although asked (never free, never silent)
        # Calls answered (or being answered) whose counting, or fixture, is not done yet: a report
        # waits for them. Each is kept with what it is, so a wait that runs out can name it.
        self.pending: dict[int, str] = {}
        self._pending_ids = itertools.count(1)
        self.settled = threading.Condition(self.lock)

    def unplayed(self, mode: str) -> list[str]:
        """Owned fixtures on disk at registration that no call requested (call with ``lock`` held)."""
        if mode == "live" or (mode == "record" and self.missing):
            return []  # a recording that failed part-way says nothing about which fixtures are stale
        if mode == "replay":
            why = "was recorded but not requested"
        else:
            why = "was recorded before but not requested in this recording; delete it"
        return [
            f"{file_label(p)} {why}"
            for k, p in sorted(self.existing.items())
            if k[0] in self.owned and k not in self.served and p.exists()
        ]

    def take_index(self, session: str) -> int:
        with self.lock:
            self.owned.add(session)
            index = self.next_index.get(session, 0) + 1
            self.next_index[session] = index
            return index

    def give_back_index(self, session: str, index: int) -> None:
        """Undo ``take_index`` for a call that turned out abandoned, unless a later call took one since."""
        with self.lock:
            if self.next_index.get(session) == index:
                self.next_index[session] = index - 1

    def begin_pending(self, what: str) -> int:
        """A call is answered (or about to be) and its counting or fixture writing is still to come.

        ``what`` names it (a fixture file, a call) for the message if a report's wait runs out.
        Return the ticket to give ``end_pending``.
        """
        with self.lock:
            ticket = next(self._pending_ids)
            self.pending[ticket] = what
            return ticket

    def end_pending(self, ticket: int) -> None:
        with self.lock:
            del self.pending[ticket]
            self.settled.notify_all()

    def wait_settled(self, timeout: float) -> list[str]:
        """Wait until every call answered so far is counted and its fixture written (call with ``lock`` held);
        return what is still unfinished when ``timeout`` ran out (nothing once settled)."""
        self.settled.wait_for(lambda: not self.pending, timeout=timeout)
        return sorted(self.pending.values())

    def count(
        self, key: tuple[str, int] | None, provider: str, usage: CallUsage, session: str = "",
        usd: float | None = 0.0,
    ) -> None:
        """Count one answered call; ``usd`` is its cost, None when its model has no price."""
        with self.lock:
            if key is not None:
                self.served.add(key)
            self.calls += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.total_tokens += usage.total_tokens
            if usd is None:
                self.unpriced_calls += 1
                self.unpriced_models.update(usage.models or {"(no model named)"})
            else:
                self.usd += usd
            if provider:
                self.providers.add(provider)
            if session == JUDGE_SESSION:  # "which model answered" lists the judge apart
                self.judge_calls += 1
                self.judge_models.update(usage.models)
                return
            self.models.update(usage.models)
            self.answered_by.update((provider or "unknown provider", m) for m in usage.models)

    def log_call(self, make: Any) -> None:
        """Keep the record ``make(number)`` builds for the next call, within the log's bound."""
        from evalrun.models.transcript import MAX_CALLS

        with self.lock:
            self.calls_seen += 1
            number = self.calls_seen
            if number > MAX_CALLS:
                return
        record = make(number)  # built outside the lock: it parses the bodies
        with self.lock:
            self.call_log.append(record)
            self.call_log.sort(key=lambda r: r.get("n", 0))

    def note_missing(self, key: tuple[str, int] | None, message: str, missing_file: Path | None = None) -> None:
        with self.lock:
            if key is not None:
                self.served.add(key)  # requested: it is not also "unplayed"
            self.missing.append(message)
            if missing_file is not None:
                self.missing_fixtures.append((missing_file, message))
