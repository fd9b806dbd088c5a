"""The model budget: a thread-safe meter of calls, tokens and dollars against a cap.

This module owns when a call is refused. A call takes a slot before it is
made (so parallel evals cannot overshoot a calls cap); its tokens are added
when its response has been read, so the tokens cap can be overshot by the one
call that crosses it, and every call after that is refused. The proxy adds
them just after the client has the answer's last byte (off the call's
latency): between the two the call is *unsettled*, and a call asking for a
slot under a tokens or dollars cap waits until none is, so a call made after
another's answer arrived is measured against that answer's tokens. Dollars (``usd``)
are added the same way, from the call's tokens and ``[models.prices]``; an
unpriced call adds nothing to them (the run reports it as unpriced). A refusal is not
a failure of the model: the runner gives the eval status ``budget``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

SETTLE_WAIT_S = 30.0  # settling takes microseconds; the bound only keeps a bug from hanging every call


class BudgetLimits(Protocol):
    """``evalrun.manifest.Budget`` or anything with the same two fields."""

    @property
    def calls(self) -> int | None: ...

    @property
    def tokens(self) -> int | None: ...


class BudgetMeter:
    """Counts calls and tokens; refuses a call once either cap is reached."""

    def __init__(self, limits: BudgetLimits | None, label: str = "budget") -> None:
        self.max_calls = limits.calls if limits is not None else None
        self.max_tokens = limits.tokens if limits is not None else None
        self.max_usd: float | None = getattr(limits, "usd", None) if limits is not None else None
        self.usd = 0.0
        self.label = label
        self.calls = 0
        self.tokens = 0
        self.refused = 0
        self._lock = threading.Lock()
        self._unsettled = 0  # calls answered whose tokens and dollars are not added yet
        self._settled = threading.Condition(self._lock)

    def acquire(self) -> str | None:
        """Take a slot for one call; return why it is refused, or None when it may go."""
        with self._lock:
            self._wait_settled()
            reason = self._exhaustion()
            if reason is not None:
                self.refused += 1
                return reason
            self.calls += 1
            return None

    def release(self) -> None:
        """Give back a slot taken for a call that never reached a model (upstream unreachable)."""
        with self._lock:
            self.calls = max(0, self.calls - 1)

    def add_tokens(self, tokens: int) -> None:
        with self._lock:
            self.tokens += tokens

    def add_usd(self, usd: float) -> None:
        with self._lock:
            self.usd += usd

    def begin_settle(self) -> None:
        """A call's answer is about to reach its client; its tokens and dollars follow (``end_settle``)."""
        with self._lock:
            self._unsettled += 1

    def end_settle(self) -> None:
        """The call's tokens and dollars are added (or it had none to add)."""
        with self._lock:
            self._unsettled -= 1
            self._settled.notify_all()

    def exhausted(self) -> bool:
        """True once no further call would be allowed."""
        with self._lock:
            self._wait_settled()
            return self._exhaustion() is not None

    def _wait_settled(self) -> None:
        # Only caps that settling changes are worth the wait: calls are counted when taken.
        if self.max_tokens is not None or self.max_usd is not None:
            self._settled.wait_for(lambda: self._unsettled == 0, timeout=SETTLE_WAIT_S)

    def _exhaustion(self) -> str | None:
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"{self.label} exhausted: {self.calls} of {self.max_calls} calls used"
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            return f"{self.label} exhausted: {self.tokens} of {self.max_tokens} tokens used"
        if self.max_usd is not None and self.usd >= self.max_usd:
            return f"{self.label} exhausted: ${self.usd:.4f} of ${self.max_usd:g} used"
        return None


# ---------------------------------------------------------------- several meters at once
# A call counts against the run's budget, its experiment's (if any) and its eval's own.


def acquire_all(meters: Sequence[BudgetMeter]) -> str | None:
    """Take a slot in every meter, in order; on the first refusal give back those taken and say why."""
    taken: list[BudgetMeter] = []
    for meter in meters:
        refusal = meter.acquire()
        if refusal is not None:
            for held in taken:
                held.release()
            return refusal
        taken.append(meter)
    return None


def release_all(meters: Sequence[BudgetMeter]) -> None:
    """Give back the slots of a call that never reached a model."""
    for meter in meters:
        meter.release()


@contextmanager
def settling(meters: Sequence[BudgetMeter]) -> Iterator[None]:
    """While a call is answered and then counted, it is unsettled in every meter it counts against."""
    begin_settling(meters)
    try:
        yield
    finally:
        end_settling(meters)


def begin_settling(meters: Sequence[BudgetMeter]) -> None:
    """The call is unsettled in every meter until ``end_settling`` (``settling`` as two halves)."""
    for meter in meters:
        meter.begin_settle()


def end_settling(meters: Sequence[BudgetMeter]) -> None:
    for meter in reversed(meters):
        meter.end_settle()


def add_all(meters: Sequence[BudgetMeter], tokens: int, usd: float) -> None:
    for meter in meters:
        meter.add_tokens(tokens)
        meter.add_usd(usd)
