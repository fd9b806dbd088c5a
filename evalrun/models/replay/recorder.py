"""Writing record mode's fixtures off the calls' latency: one writer thread per proxy.

A call answered in record mode hands its fixture here; the writer thread
redacts and writes it (atomically, with fsync: ``evalrun.models.replay.fixtures``)
while the client already has its answer, even for its next call on the same
keep-alive connection. The eval's report waits for the fixture: it is pending
on the eval's state from ``submit`` until it is on disk or its failure noted
(any exception, not only a full disk: nothing is lost silently in the thread).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from concurrent.futures import ThreadPoolExecutor

from evalrun.errors import file_label
from evalrun.models.replay.fixtures import RecordedResponse, fixture_path, write_fixture
from evalrun.models.replay.state import EvalState
from evalrun.secrets import scrub


@dataclass(frozen=True)
class FixtureToWrite:
    """One answered call: what its fixture records (the request as sent, the answer as received)."""

    session: str
    index: int
    provider: str
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    recorded: RecordedResponse


class FixtureRecorder:
    """``submit`` a fixture per answered call; ``close`` once every one is written."""

    def __init__(self, secrets: set[str]) -> None:
        self._secrets = secrets  # never written: the keys and the proxy's own token
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None

    def submit(self, state: EvalState, fixture: FixtureToWrite) -> None:
        assert state.fixtures_dir is not None
        where = file_label(fixture_path(state.fixtures_dir, fixture.session, fixture.index))
        ticket = state.begin_pending(where)
        try:
            self._writer().submit(self._write, state, fixture, ticket)
        except BaseException:
            state.end_pending(ticket)
            raise

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _writer(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalrun-fixtures")
            return self._executor

    def _write(self, state: EvalState, f: FixtureToWrite, ticket: int) -> None:
        assert state.fixtures_dir is not None
        where = fixture_path(state.fixtures_dir, f.session, f.index)
        try:
            write_fixture(
                where,
                session=f.session,
                index=f.index,
                provider=f.provider,
                method=f.method,
                request_path=f.path,
                request_headers=f.headers,
                request_body=f.body,
                response=f.recorded,
                secrets=self._secrets,
            )
        except OSError as exc:
            message = f"evalrun record: cannot write {file_label(where)}: {exc.strerror or exc}"
            state.note_missing(None, scrub(message, self._secrets))
        except Exception as exc:  # never a fixture lost silently in the writer thread (RecursionError, ...)
            message = (f"evalrun record: cannot write {file_label(where)}: the call could not be stored "
                       f"({exc.__class__.__name__}); not recorded")
            state.note_missing(None, scrub(message, self._secrets))
        finally:
            state.end_pending(ticket)
