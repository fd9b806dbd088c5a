"""The one interface every history backend offers, and opening the right one.

``HistoryStore`` is what commands and the report use; ``evalrun.history.backends.open_store`` picks
SQLite or PostgreSQL from a ``HistoryLocation``. Every backend failure leaves
as ``HistoryError`` with one line, the password scrubbed from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from evalrun.errors import EvalrunError
from evalrun.history.location import HistoryLocation
from evalrun.history.records import StoredEval, StoredRun
from evalrun.secrets import scrub

DEFAULT_LAST = 20


class HistoryError(EvalrunError):
    """The history store cannot be opened, read or written; the message is one line (exit 2 in a command)."""


class HistoryStore(Protocol):
    location: HistoryLocation

    def append(self, run: StoredRun, evals: Iterable[StoredEval] | None = None) -> bool:
        """Store one run, all or nothing; False when a run with that id is already stored.

        ``evals`` (default: ``run.evals``) may be a generator, consumed one eval at a time.
        """
        ...

    def runs(self, tier: str | None = None, last: int = DEFAULT_LAST, shards: bool = False) -> list[StoredRun]:
        """The last runs, oldest first (of one tier, or of all); ``shards``: also the runs of single shards."""
        ...

    def durations(self, tier: str, runs: int) -> list[tuple[str, float]]:
        """(eval, seconds) of each eval that ran in the tier's last ``runs`` whole runs (merged ones too, never a
        single shard's), most recent first."""
        ...

    def close(self) -> None: ...


def describe_failure(location: HistoryLocation, exc: BaseException) -> str:
    """One line for a backend error: where, and what went wrong, with no password in it."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    text = scrub(text, location.secrets, "***")
    if len(text) > 300:
        text = text[:299] + "…"
    return f"{location.shown}: {text}"
