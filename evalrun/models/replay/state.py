"""Per-eval accounting of the proxy: counters, findings, and the report the runner reads.

This module owns ``ProxyEvalReport``, the record of what one eval did with the
model (calls, tokens, provider, models that answered, missing and unplayed
fixtures, budget), and the thread-safe state the proxy keeps while the eval runs.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalrun.models.replay.budget import BudgetLimits, BudgetMeter
from evalrun.models.replay.fixtures import list_fixtures
from evalrun.models.replay.usage import CallUsage


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
            "calls": self.calls,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens, "total": self.total_tokens},
        }


class EvalState:
    """The counters and findings of one registered eval; every field is guarded by ``lock``."""

    def __init__(self, name: str, fixtures_dir: Path | None, budget: BudgetLimits | None) -> None:
        self.name = name
        self.fixtures_dir = fixtures_dir
        self.repeat: int | None = None  # one run of a repeated eval: its sessions get ".r<repeat>" (not run 0)
        self.meter = BudgetMeter(budget, f"eval {name!r} budget")  # without limits it only counts
        self.lock = threading.Lock()
        self.next_index: dict[str, int] = {}
        self.served: set[tuple[str, int]] = set()
        # On disk when the eval registered: what the report lists as unplayed if never requested.
        self.existing = list_fixtures(fixtures_dir) if fixtures_dir is not None else {}
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.total_tokens = 0
        self.providers: set[str] = set()
        self.models: set[str] = set()
        self.missing: list[str] = []
        self.budget_message: str | None = None
        self.pending_writes = 0
        self.writes_done = threading.Condition(self.lock)

    def take_index(self, session: str) -> int:
        with self.lock:
            index = self.next_index.get(session, 0) + 1
            self.next_index[session] = index
            return index

    def begin_write(self) -> None:
        with self.lock:
            self.pending_writes += 1

    def end_write(self) -> None:
        with self.lock:
            self.pending_writes -= 1
            self.writes_done.notify_all()

    def count(self, key: tuple[str, int], provider: str, usage: CallUsage) -> None:
        with self.lock:
            self.served.add(key)
            self.calls += 1
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
            self.total_tokens += usage.total_tokens
            if provider:
                self.providers.add(provider)
            self.models.update(usage.models)

    def note_missing(self, key: tuple[str, int] | None, message: str) -> None:
        with self.lock:
            if key is not None:
                self.served.add(key)  # requested: it is not also "unplayed"
            self.missing.append(message)
