"""The record/replay model proxy: a local HTTP server between the evals and any model API.

This module owns the proxy's lifecycle and what it answers. It runs in-process
(a stdlib ``ThreadingHTTPServer`` in a daemon thread on 127.0.0.1, ephemeral
port) and is generic over HTTP: any method and path are relayed, so
OpenAI-style (``/v1/chat/completions``, ``/v1/responses``, ``/v1/embeddings``)
and Anthropic-style (``/v1/messages``) APIs both work, plain or streamed.

Endpoints. Each eval registers and gets its own base URL,
``http://127.0.0.1:PORT/e/<eval-name>``; a request under that prefix belongs
to that eval. The eval's environment then holds (``evalrun.models.scorer_env.endpoint_env``)::

    OPENAI_BASE_URL    = <base>/v1
    OPENAI_API_BASE    = <base>/v1
    ANTHROPIC_BASE_URL = <base>
    EVALRUN_MODEL_URL  = <base>

and the part of the path after ``<base>`` (``/v1/chat/completions``) is what
is relayed upstream or looked up in the fixtures.

Sessions. A call's session is its ``X-Evalrun-Session`` header, else the eval's
name; its index counts that session's calls from 1, in arrival order. The
fixture of a call is ``<fixtures>/<session>/<index:04d>.json``
(``evalrun.models.replay.fixtures``).

Modes.
- ``replay`` (t2): the fixture is served. A missing one is answered with HTTP
  404 and an error naming the exact path expected, and is recorded in the
  eval's report, so the eval fails even if the code under test swallowed the
  error. Fixtures never requested are listed as unplayed at the end.
- ``record`` (``t3 --record``): relayed upstream, and the fixture is written
  atomically just after the answer (its fsync is kept off the call's
  latency); ``eval_report`` waits for writes still under way.
- ``live`` (t3): relayed, nothing written; usage counted.

Errors the proxy itself answers have the shape both SDK families parse,
``{"type": "error", "error": {"type": K, "code": K, "message": ...}}``, with a
status no SDK retries: 404 missing fixture, 400 unusable fixture or invalid
session, 402 budget exhausted (``evalrun_budget_exhausted``), 502 upstream
unreachable.
"""

from __future__ import annotations

import http.client
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote

from evalrun.errors import file_label
from evalrun.secrets import key_values
from evalrun.models.replay.budget import BudgetLimits, BudgetMeter
from evalrun.models.replay.fixtures import (
    FixtureError,
    RecordedResponse,
    check_session,
    default_session,
    fixture_path,
    read_fixture,
    redact,
    write_fixture,
)
from evalrun.models.replay.server import ProxyHandler, ProxyServer
from evalrun.models.replay.state import EvalState, ProxyEvalReport
from evalrun.models.replay.upstream import (
    HOP_HEADERS,
    ConnectionPool,
    UpstreamError,
    api_style,
    choose_target,
    upstream_headers,
)
from evalrun.models.replay.usage import read_usage

Mode = Literal["replay", "record", "live"]
MODES: tuple[str, ...] = ("replay", "record", "live")
SESSION_HEADER = "X-Evalrun-Session"
WRITE_WAIT_S = 30.0
_EVENT_END = re.compile(r"(?<=\r\n\r\n)|(?<=\n\n)")  # split a stream into SSE events, keeping their ends


class ReplayProxy:
    """The proxy. ``start()``, ``register_eval()`` per eval, ``eval_report()`` after it, ``stop()``.

    ``key_env`` is the real environment, read only in record and live modes to
    authenticate upstream; ``redact_values`` (plus the key values found in
    ``key_env``) never reach a fixture. ``budget`` caps the whole run.
    """

    def __init__(
        self,
        mode: Mode,
        upstream: str | None = None,
        budget: BudgetLimits | None = None,
        key_env: Mapping[str, str] | None = None,
        redact_values: set[str] | None = None,
        *,
        port: int = 0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown proxy mode {mode!r}; use one of {', '.join(MODES)}")
        self.mode: Mode = mode
        self.upstream = upstream.rstrip("/") if upstream else None
        self.key_env: Mapping[str, str] = dict(key_env or {}) if mode != "replay" else {}
        self.secrets = set(redact_values or ()) | key_values(key_env or {})
        self.meter = BudgetMeter(budget, "model budget")
        self._port = port
        self._log = log
        self._evals: dict[str, EvalState] = {}
        self._default_eval: str | None = None
        self._lock = threading.Lock()
        self._server: ProxyServer | None = None
        self._thread: threading.Thread | None = None
        self._pool = ConnectionPool()
        self._executor: ThreadPoolExecutor | None = None

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Bind 127.0.0.1 (ephemeral port unless one was given) and serve in a daemon thread."""
        server = ProxyServer(("127.0.0.1", self._port), ProxyHandler)
        server.proxy = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, after the fixtures of calls already answered are on disk."""
        for state in list(self._evals.values()):
            with state.lock:
                state.writes_done.wait_for(lambda: state.pending_writes == 0, timeout=WRITE_WAIT_S)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._pool.close()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> ReplayProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the proxy is not started; call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- evals -------------------------------------------------------------

    def register_eval(
        self,
        eval_name: str,
        fixtures_dir: Path | None,
        budget: BudgetLimits | None = None,
        default: bool = False,
        repeat: int | None = None,
    ) -> str:
        """Make ``eval_name`` known; return its base URL. ``default``: also own un-prefixed paths.

        ``repeat``: one run of a repeated eval (evalrun.repeats), with its own base URL, counters and
        budget; its sessions get ``.r<repeat>`` appended (none for run 0, so fixtures recorded without
        repeats keep working), and only its own sessions' fixtures can be unplayed."""
        if fixtures_dir is None and self.mode != "live":
            raise ValueError(f"eval {eval_name!r}: {self.mode} mode needs a fixtures folder")
        key = _eval_key(eval_name, repeat)
        with self._lock:
            state = EvalState(eval_name, fixtures_dir, budget)
            if repeat is not None:
                state.repeat = repeat
                state.existing = {k: p for k, p in state.existing.items() if session_repeat(k[0]) == repeat}
            self._evals[key] = state
            if default:
                self._default_eval = key
        return f"{self.url}/e/{quote(key, safe='')}"

    def eval_report(self, eval_name: str, repeat: int | None = None) -> ProxyEvalReport:
        """What ``eval_name`` (that run of it) did with the model so far; call it once the eval's process has ended."""
        state = self._evals.get(_eval_key(eval_name, repeat))
        if state is None:
            raise ValueError(f"eval {eval_name!r} was never registered with the proxy; call register_eval() first")
        with state.lock:
            # A call already answered may still be writing its fixture (record mode).
            state.writes_done.wait_for(lambda: state.pending_writes == 0, timeout=WRITE_WAIT_S)
            return ProxyEvalReport(
                eval=eval_name,
                mode=self.mode,
                calls=state.calls,
                input_tokens=state.input_tokens,
                output_tokens=state.output_tokens,
                total_tokens=state.total_tokens,
                providers=tuple(sorted(state.providers)),
                models=tuple(sorted(state.models)),
                missing=tuple(state.missing),
                unplayed=tuple(self._unplayed(state)),
                budget_hit=state.budget_message is not None,
                budget_message=state.budget_message,
            )

    def budget_exhausted(self) -> bool:
        """True once the run's budget allows no further call: evals not yet started get status budget."""
        return self.meter.exhausted()

    def _unplayed(self, state: EvalState) -> list[str]:
        if self.mode == "live":
            return []
        if self.mode == "replay":
            why = "was recorded but not requested"
        else:
            why = "was recorded before but not requested in this recording; delete it"
        return [
            f"{file_label(p)} {why}"
            for k, p in sorted(state.existing.items())
            if k not in state.served and p.exists()
        ]

    # -- one call ------------------------------------------------------------

    def handle(self, handler: ProxyHandler) -> None:
        """Answer one request; called on the server's thread for that connection."""
        method = handler.command
        headers = dict(handler.headers.items())
        body = handler.read_body()
        routed = self._route(handler.path)
        if routed is None:
            handler.send_error_json(
                404, "evalrun_unknown_eval", f"evalrun proxy: no eval is registered for {handler.path!r}; "
                "send requests under the base URL the eval was given (http://127.0.0.1:PORT/e/<eval>)"
            )
            return
        state, path = routed
        shown = path.split("?", 1)[0]  # messages and logs never show a query string: it may carry a key
        session = _header(headers, SESSION_HEADER) or default_session(state.name)
        if state.repeat:
            session = f"{session}.r{state.repeat}"  # each run of a repeated eval records and replays its own
        problem = check_session(session)
        if problem is not None:
            message = f"evalrun proxy: eval {state.name!r}: {SESSION_HEADER}: {problem}"
            state.note_missing(None, message)
            handler.send_error_json(400, "evalrun_invalid_session", message)
            return
        refusal = self._acquire_budget(state)
        if refusal is not None:
            message = f"evalrun proxy: {refusal}; call refused, the eval is not checked (status budget)"
            with state.lock:
                state.budget_message = state.budget_message or message
            self.note(f"{state.name}/{session} {method} {shown} -> 402 budget exhausted")
            handler.send_error_json(402, "evalrun_budget_exhausted", message)
            return
        index = state.take_index(session)
        if self.mode == "replay":
            self._replay(handler, state, session, index, method, path, shown)
        else:
            self._relay(handler, state, session, index, method, path, headers, body)

    def _route(self, raw_path: str) -> tuple[EvalState, str] | None:
        if raw_path.startswith("/e/"):
            quoted, _, rest = raw_path[3:].partition("/")
            state = self._evals.get(unquote(quoted))
            return (state, "/" + rest) if state is not None else None
        if self._default_eval is not None:
            return self._evals[self._default_eval], raw_path
        return None

    def _acquire_budget(self, state: EvalState) -> str | None:
        refusal = self.meter.acquire()
        if refusal is None:
            refusal = state.meter.acquire()
            if refusal is not None:
                self.meter.release()
        return refusal

    def _release_budget(self, state: EvalState) -> None:
        self.meter.release()
        state.meter.release()

    def _add_tokens(self, state: EvalState, tokens: int) -> None:
        self.meter.add_tokens(tokens)
        state.meter.add_tokens(tokens)

    def _replay(
        self, handler: ProxyHandler, state: EvalState, session: str, index: int, method: str, path: str, shown: str
    ) -> None:
        assert state.fixtures_dir is not None
        key = (session, index)
        where = fixture_path(state.fixtures_dir, session, index)
        label = f"eval {state.name!r}, session {session!r}, call {index}"
        if not where.is_file():
            message = (
                f"evalrun replay: missing fixture {file_label(where)} ({label}: {method} {shown}); "
                "record it with `evalrun t3 --record`, or make the code call the model as it did when recorded"
            )
            self._refuse(handler, state, key, 404, "evalrun_missing_fixture", message)
            return
        try:
            fixture = read_fixture(where)
        except FixtureError as exc:
            self._refuse(handler, state, key, 400, "evalrun_bad_fixture", f"evalrun replay: {exc} ({label})")
            return
        if fixture.method != method or fixture.path.split("?")[0] != path.split("?")[0]:
            message = (
                f"evalrun replay: {file_label(where)} was recorded for {fixture.method} {fixture.path.split('?')[0]} "
                f"but call {index} of session {session!r} is {method} {shown}; the calls changed order, re-record"
            )
            self._refuse(handler, state, key, 400, "evalrun_fixture_mismatch", message)
            return
        response = fixture.response
        usage = read_usage(response.body, response.stream or ())
        state.count(key, fixture.provider, usage)
        self._add_tokens(state, usage.total_tokens)
        self.note(f"{state.name}/{session}#{index:04d} {method} {shown} -> {response.status} (fixture)")
        if response.stream is not None:
            handler.start_stream(response.status, response.headers)
            for chunk in response.stream:
                handler.write_chunk(chunk.encode("utf-8"))
            handler.end_stream()
        else:
            handler.send_whole(response.status, response.headers, response.body)

    def _refuse(
        self, handler: ProxyHandler, state: EvalState, key: tuple[str, int], status: int, kind: str, message: str
    ) -> None:
        state.note_missing(key, message)
        self.note(message)
        handler.send_error_json(status, kind, message)

    def _relay(
        self,
        handler: ProxyHandler,
        state: EvalState,
        session: str,
        index: int,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
    ) -> None:
        shown = path.split("?", 1)[0]
        style = api_style(path, headers)
        target = choose_target(self.upstream, path, style)
        sent_headers = upstream_headers(headers, style, self.key_env)
        try:
            conn, response = self._pool.request(target, method, sent_headers, body)
        except UpstreamError as exc:
            self._release_budget(state)
            message = f"evalrun proxy: upstream {exc} ({state.name}/{session} call {index}: {method} {shown})"
            state.note_missing(None, message)
            self.note(message)
            handler.send_error_json(502, "evalrun_upstream_unreachable", message)
            return
        reply_headers = {k.lower(): v for k, v in response.getheaders() if k.lower() not in HOP_HEADERS}
        streamed = reply_headers.get("content-type", "").startswith("text/event-stream")
        try:
            if streamed:
                handler.start_stream(response.status, reply_headers)
                raw = bytearray()
                while chunk := response.read1(65536):
                    raw += chunk
                    handler.write_chunk(chunk)  # relayed as it arrives, not when the call ends
                text = raw.decode("utf-8", errors="replace")
                recorded = RecordedResponse(response.status, reply_headers, stream=tuple(_events(text)))
            else:
                recorded = RecordedResponse(response.status, reply_headers, body=response.read())
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            message = f"evalrun proxy: upstream {target.base_url} broke off the response ({exc.__class__.__name__})"
            state.note_missing(None, message)
            handler.close_connection = True
            return
        self._pool.give_back(target.base_url, conn, response)
        recording = self.mode == "record"
        if recording:
            state.begin_write()  # before counting: a report that shows the call waits for its fixture
        try:
            usage = read_usage(recorded.body, recorded.stream or ())
            state.count((session, index), target.provider, usage)
            self._add_tokens(state, usage.total_tokens)
            self.note(f"{state.name}/{session}#{index:04d} {method} {shown} -> {response.status} ({self.mode})")
            # The response completes only now, so a finished eval's report already counts this call.
            if streamed:
                handler.end_stream()
            else:
                handler.send_whole(recorded.status, reply_headers, recorded.body)
        finally:
            if recording:
                # Written by the writer thread after answering: the fsync stays off the call's latency,
                # even for the next call on the same keep-alive connection.
                self._writer().submit(
                    self._record, state, session, index, target.provider, method, path, headers, body, recorded
                )

    def _writer(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalrun-fixtures")
            return self._executor

    def _record(
        self,
        state: EvalState,
        session: str,
        index: int,
        provider: str,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        recorded: RecordedResponse,
    ) -> None:
        assert state.fixtures_dir is not None
        where = fixture_path(state.fixtures_dir, session, index)
        try:
            write_fixture(
                where,
                session=session,
                index=index,
                provider=provider,
                method=method,
                request_path=path,
                request_headers=headers,
                request_body=body,
                response=recorded,
                secrets=self.secrets,
            )
        except OSError as exc:
            state.note_missing(None, f"evalrun record: cannot write {file_label(where)}: {exc.strerror or exc}")
        finally:
            state.end_write()

    def note(self, line: str) -> None:
        """One line for the log callback (``evalrun replay serve`` prints them)."""
        if self._log is not None:
            self._log(redact(line, self.secrets))


def _events(text: str) -> list[str]:
    return [event for event in _EVENT_END.split(text) if event]


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value.strip()
    return ""


def _eval_key(eval_name: str, repeat: int | None) -> str:
    # Eval names never hold "/", so a run's key cannot collide with another eval's name.
    return eval_name if repeat is None else f"{eval_name}/r{repeat}"


_REPEAT_SUFFIX = re.compile(r"\.r([1-9][0-9]*)$")


def session_repeat(session: str) -> int:
    """Which run of a repeated eval a session belongs to: ``x.r3`` is run 3, ``x`` run 0."""
    match = _REPEAT_SUFFIX.search(session)
    return int(match.group(1)) if match else 0
