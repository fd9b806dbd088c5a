"""The record/replay model proxy: a local HTTP server between the evals and any model API.

This module owns the proxy's lifecycle and what it answers. It runs in-process
(a stdlib ``ThreadingHTTPServer`` in a daemon thread on 127.0.0.1, ephemeral
port) and is generic over HTTP: any method and path are relayed, so
OpenAI-style (``/v1/chat/completions``, ``/v1/responses``, ``/v1/embeddings``)
and Anthropic-style (``/v1/messages``) APIs both work, plain or streamed.

Endpoints. Each run's proxy has a random token, and each eval registers and
gets its own base URL, ``http://127.0.0.1:PORT/t/<token>/e/<eval-name>``; a
request without the token is refused (401), so no other local process can
spend the run's key. The eval's environment then holds
(``evalrun.models.scorer_env.endpoint_env``)::

    OPENAI_BASE_URL    = <base>/v1
    OPENAI_API_BASE    = <base>/v1
    ANTHROPIC_BASE_URL = <base>
    ANTHROPIC_API_URL  = <base>
    EVALRUN_MODEL_URL  = <base>

and the part of the path after ``<base>`` (``/v1/chat/completions``) is what
is relayed upstream or looked up in the fixtures.

Sessions. A call's session is its ``X-Evalrun-Session`` header, else the eval's
default session (its name, or the eval named by ``fixtures_for``). The fixture
of a call is ``<fixtures>/<session>/<index:04d>.json``
(``evalrun.models.replay.fixtures``).

Modes.
- ``replay`` (t2): the recording of the call is served, chosen by request and
  index (``evalrun.models.replay.player``). A call no recording answers gets an
  error naming the fixture and what changed, and is recorded in the eval's
  report, so the eval fails even if the code under test swallowed the error.
  Owned fixtures never requested are listed as unplayed at the end.
- ``record`` (``t3 --record``): relayed upstream, and the fixture is written
  atomically just after the answer, by a writer thread (its redaction and
  fsync are kept off the call's latency); ``eval_report`` waits for writes
  still under way. A call takes its
  index only once its answer reached the client whole: an attempt the client
  abandoned (timed out, disconnected) is not recorded, and its retry takes the
  index. A stream takes it as its end event goes to the client, before the
  upstream ends the stream: an SDK returns at that event and may call again at
  once, and the next call comes after it, as the code made them. A gzip or
  deflate answer is decoded for the client and the fixture.
- ``live`` (t3): relayed, nothing written; usage counted.

Upstreams. A relayed call goes to the upstream of its API style, the eval's own
(``register_eval(upstreams=...)``, from its ``env``) over the proxy's; which one
and why is decided in ``evalrun.models.upstreams``. An upstream answer that is
no answer of the model's (``NOT_AN_ANSWER``: 401, 403, 404, 405, 407, 421) is
never recorded and fails the eval naming the URL called. An OpenAI chat stream
that does not ask for its usage is sent upstream asking for it; the usage chunk
is counted and recorded but kept from the client (``usage.UsageChunks``), in
replay too.

Latency. A streamed answer is relayed as it arrives, all that has arrived in
one send (``upstream.body_pieces``); a replayed one goes out in one send. In
every mode the client gets the answer's last byte first, and the call is
counted (usage, cost, notes, the fixture) just after: until then it is
pending, and ``eval_report`` and a call under a tokens or usd cap wait for it
(``_settling``), so neither can miss it. A relayed stream is pending for the
report from its first byte: an SDK stops reading at ``[DONE]`` and its eval
may end before the upstream ends the stream; for a tokens or usd cap a stream is
unsettled from its end event (``[DONE]``, ``message_stop``, ``response.completed``),
which the SDKs stop reading at before they call again. A report whose wait runs out
(``WRITE_WAIT_S``) in record mode fails the eval, naming each unwritten call.

Errors the proxy itself answers have the shape both SDK families parse,
``{"type": "error", "error": {"type": K, "code": K, "message": ...}}``, carry
``x-should-retry: false`` (both official SDKs obey it) and a status no SDK
retries anyway: 401 no token, 404 missing fixture or unknown eval, 400
mismatching or unusable fixture, invalid session or internal error, 402
budget exhausted (``evalrun_budget_exhausted``), 424 upstream unreachable,
413 request body over 64 MiB, 400 a chunk size or Content-Length that is no
plain number. The token is checked before any body is read; a refused
request's body is read only when sized and at most 64 KiB
(``evalrun.models.replay.server``).
"""


from __future__ import annotations

import hmac
import http.client
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, unquote

from evalrun.secrets import scrub
from evalrun.models.replay.budget import (
    BudgetLimits,
    BudgetMeter,
    acquire_all,
    add_all,
    begin_settling,
    end_settling,
    release_all,
    settling,
)
from evalrun.models.replay.fixtures import RecordedResponse, check_session, default_session, fixture_path
from evalrun.models.replay.recorder import FixtureRecorder, FixtureToWrite
from evalrun.models.replay.matching import normalise_body
from evalrun.models.replay.player import MATCHES, Call, Match, Refusal, choose
from evalrun.models.replay.server import BodyRefused, ProxyHandler, ProxyServer
from evalrun.models.replay.state import EvalState, ProxyEvalReport
from evalrun.models.replay.upstream import (
    HOP_HEADERS,
    MAX_DECODED_BYTES,
    ConnectionPool,
    Target,
    UpstreamError,
    api_style,
    body_pieces,
    choose_target,
    content_decoder,
    decoded_request_body,
    upstream_headers,
)
from evalrun.models.cost import call_cost
from evalrun.models.replay.usage import CallUsage, UsageChunks, ask_for_usage, is_usage_chunk, read_usage

Mode = Literal["replay", "record", "live"]
MODES: tuple[str, ...] = ("replay", "record", "live")
SESSION_HEADER = "X-Evalrun-Session"
WRITE_WAIT_S = 30.0
_EVENT_END = re.compile(r"(?<=\r\n\r\n)|(?<=\n\n)")  # split a stream into SSE events, keeping their ends


class ReplayProxy:
    """The proxy. ``start()``, ``register_eval()`` per eval, ``eval_report()`` after it, ``stop()``.

    ``key_env`` is the real environment, read only in record and live modes to
    authenticate upstream; ``redact_values`` (a run's secrets, worked out once:
    ``evalrun.secrets.known_secrets``; they include ``key_env``'s key values)
    never reach a fixture, a log line or a message.
    ``budget`` caps the whole run; ``match`` is how replay pairs calls with recordings.
    """

    def __init__(
        self,
        mode: Mode,
        upstream: str | Mapping[str, str] | None = None,
        budget: BudgetLimits | None = None,
        key_env: Mapping[str, str] | None = None,
        redact_values: set[str] | None = None,
        *,
        port: int = 0,
        log: Callable[[str], None] | None = None,
        match: Match = "request",
        prices: Mapping[str, Any] | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown proxy mode {mode!r}; use one of {', '.join(MODES)}")
        if match not in MATCHES:
            raise ValueError(f"unknown replay match {match!r}; use one of {', '.join(MATCHES)}")
        self.mode: Mode = mode
        self.match: Match = match
        self.prices: Mapping[str, Any] | None = prices  # None: cost is not reported
        # Where record and live calls go: one base URL, or one per API style ("openai", "anthropic"), each
        # an eval may change (register_eval); a style not named goes to its provider's API.
        self.upstream = upstream.rstrip("/") if isinstance(upstream, str) and upstream else None
        self.upstreams: dict[str, str] = dict(upstream) if isinstance(upstream, Mapping) else {}
        self._eval_upstreams: dict[str, dict[str, str]] = {}
        self.key_env: Mapping[str, str] = dict(key_env or {}) if mode != "replay" else {}
        self.token = os.urandom(16).hex()
        self.secrets = set(redact_values or ())
        self.meter = BudgetMeter(budget, "model budget")
        self._port = port
        self._log = log
        self._evals: dict[str, EvalState] = {}
        self._columns: dict[str, BudgetMeter] = {}  # an experiment's budget, shared by its evals
        self._default_eval: str | None = None
        self._lock = threading.Lock()
        self._server: ProxyServer | None = None
        self._thread: threading.Thread | None = None
        self._pool = ConnectionPool()
        self._recorder = FixtureRecorder(self.secrets | {self.token})

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
                state.wait_settled(WRITE_WAIT_S)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._pool.close()
        self._recorder.close()

    def __enter__(self) -> ReplayProxy:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The proxy's address, fit to show: without the run token, no request is served there."""
        if self._server is None:
            raise RuntimeError("the proxy is not started; call start() first")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def endpoint(self) -> str:
        """The proxy's base URL, run token included: un-prefixed paths under it go to the default eval."""
        return f"{self.url}/t/{self.token}"

    # -- evals -------------------------------------------------------------

    def register_eval(
        self,
        eval_name: str,
        fixtures_dir: Path | None,
        budget: BudgetLimits | None = None,
        default: bool = False,
        session: str | None = None,
        repeat: int | None = None,
        column: str | None = None,
        column_budget: BudgetLimits | None = None,
        upstreams: Mapping[str, str] | None = None,
        record_command: str | None = None,
    ) -> str:
        """Make ``eval_name`` known; return its base URL.

        ``record_command``: what a replay refusal tells the user to run (``evalrun t3 --record -e NAME``).

        ``session``: the default session of its calls (the name of the eval it records
        for, ``fixtures_for``); by default its own name. ``default``: also own un-prefixed paths.
        ``repeat``: one run of a repeated eval (evalrun.repeats), with its own base URL, counters and
        budget; its sessions get ``.r<repeat>`` appended (none for run 0, so fixtures recorded without
        repeats keep working), and only its own sessions' fixtures can be unplayed.
        ``upstreams``: this eval's upstream per API style, over the proxy's.
        """
        if fixtures_dir is None and self.mode != "live":
            raise ValueError(f"eval {eval_name!r}: {self.mode} mode needs a fixtures folder")
        key = _eval_key(eval_name, repeat)
        with self._lock:
            own = default_session(session) if session else default_session(eval_name)
            if repeat:
                own = f"{own}.r{repeat}"
            state = EvalState(eval_name, fixtures_dir, budget, own)
            state.repeat = repeat
            if record_command:
                state.record_command = record_command
            if column is not None:
                if column not in self._columns:
                    self._columns[column] = BudgetMeter(column_budget, f"experiment {column!r} budget")
                state.column_meter = self._columns[column]
            self._evals[key] = state
            if upstreams:
                self._eval_upstreams[key] = dict(upstreams)
            if default:
                self._default_eval = key
        return f"{self.endpoint}/e/{quote(key, safe='')}"

    def eval_report(self, eval_name: str, repeat: int | None = None) -> ProxyEvalReport:
        """What ``eval_name`` (that run of it) did with the model so far; call it once the eval's process has ended."""
        state = self._evals.get(_eval_key(eval_name, repeat))
        if state is None:
            raise ValueError(f"eval {eval_name!r} was never registered with the proxy; call register_eval() first")
        with state.lock:
            # A call already answered may still be being counted, or writing its fixture (record mode).
            unfinished = state.wait_settled(WRITE_WAIT_S)
            missing = list(state.missing)
            if unfinished and self.mode == "record":  # the verdict cannot count on a recording not on disk
                missing += [self._redact(
                    f"evalrun record: eval {eval_name!r}: {what}: fixture not written within {WRITE_WAIT_S:g} s "
                    "of the eval's end; re-record"
                ) for what in unfinished]
            elif unfinished:
                self.note(self._redact(f"{eval_name}: still unfinished after {WRITE_WAIT_S:g} s, "
                                       f"not counted: {'; '.join(unfinished)}"))
            return ProxyEvalReport(
                eval=eval_name,
                mode=self.mode,
                calls=state.calls,
                input_tokens=state.input_tokens,
                output_tokens=state.output_tokens,
                total_tokens=state.total_tokens,
                providers=tuple(sorted(state.providers)),
                models=tuple(sorted(state.models)),
                missing=tuple(missing),
                missing_fixtures=tuple(state.missing_fixtures),
                call_log=tuple(state.call_log),
                calls_not_kept=max(0, state.calls_seen - len(state.call_log)),
                uncounted_calls=state.uncounted_calls,
                unplayed=tuple(state.unplayed(self.mode)) if len(missing) == len(state.missing) else (),
                budget_hit=state.budget_message is not None,
                budget_message=state.budget_message,
                answered_by=tuple(sorted(state.answered_by)),
                judge_calls=state.judge_calls,
                judge_models=tuple(sorted(state.judge_models)),
                cost=None if self.prices is None else {
                    "usd": round(state.usd, 10),
                    "unpriced_calls": state.unpriced_calls,
                    "unpriced_models": sorted(state.unpriced_models),
                },
            )

    def calls_so_far(self, eval_name: str) -> int:
        """Calls ``eval_name`` made so far, every run of it together: for the progress line, read while it runs."""
        with self._lock:
            states = [s for s in self._evals.values() if s.name == eval_name]
        return sum(s.calls + len(s.missing) for s in states)

    def budget_exhausted(self, column: str | None = None) -> bool:
        """True once the run's budget (or ``column``'s) allows no further call: evals not yet started get status budget."""
        meter = self._columns.get(column) if column is not None else None
        return self.meter.exhausted() or (meter is not None and meter.exhausted())

    # -- one call ------------------------------------------------------------

    def handle(self, handler: ProxyHandler) -> None:
        """Answer one request; called on the server's thread for that connection."""
        method = handler.command
        path = self._authorised(handler.path)
        if path is None:
            handler.skip_body()  # the token first: an unauthenticated body is never read beyond a little
            self.note(f"{method} refused: no valid run token in the path")
            handler.send_error_json(
                401, "evalrun_unauthorized", "evalrun proxy: this path has no valid run token; "
                "send requests under the base URL evalrun gave the eval (OPENAI_BASE_URL, ANTHROPIC_BASE_URL)"
            )
            return
        routed = self._route(path)
        if routed is None:
            handler.skip_body()
            handler.send_error_json(
                404, "evalrun_unknown_eval", self._redact(
                    f"evalrun proxy: no eval is registered for {path.split('?', 1)[0]!r}; "
                    "send requests under the base URL the eval was given (<proxy>/e/<eval>)"
                )
            )
            return
        state, path = routed
        try:
            self._answer(handler, state, method, path)
        except (BrokenPipeError, ConnectionResetError, BodyRefused):
            raise
        except Exception as exc:  # a bug or a hostile fixture fails the eval, never passes silently
            message = self._redact(f"evalrun proxy: internal error ({exc.__class__.__name__}: {exc}); please report it")
            state.note_missing(None, message)
            self.note(message)
            handler.close_connection = True
            handler.send_error_json(400, "evalrun_proxy_error", message)

    def _answer(self, handler: ProxyHandler, state: EvalState, method: str, path: str) -> None:
        headers = dict(handler.headers.items())
        body = handler.read_body()
        shown = path.split("?", 1)[0]  # messages and logs never show a query string: it may carry a key
        header_session = _header(headers, SESSION_HEADER)
        session = header_session or state.session  # the default session already carries a run's ".r<k>"
        if header_session and state.repeat:
            session = f"{session}.r{state.repeat}"  # each run of a repeated eval records and replays its own
        problem = check_session(session)
        if problem is not None:
            message = self._redact(f"evalrun proxy: eval {state.name!r}: {SESSION_HEADER}: {problem}")
            state.note_missing(None, message)
            handler.send_error_json(400, "evalrun_invalid_session", message)
            return
        with state.lock:
            state.owned.add(session)
        refusal = self._acquire_budget(state)
        if refusal is not None:
            message = self._redact(f"evalrun proxy: {refusal}; call refused, the eval is not checked (status budget)")
            with state.lock:
                state.budget_message = state.budget_message or message
            self.note(f"{state.name}/{session} {method} {shown} -> 402 budget exhausted")
            handler.send_error_json(402, "evalrun_budget_exhausted", message)
            return
        if self.mode == "replay":
            self._replay(handler, state, session, method, path, headers, body)
        else:
            self._relay(handler, state, session, method, path, headers, body)

    def _authorised(self, raw_path: str) -> str | None:
        """The path after the run token, or None when the token is absent or wrong."""
        if not raw_path.startswith("/t/"):
            return None
        token, slash, rest = raw_path[3:].partition("/")
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            return None
        return slash + rest if slash else "/"

    def _route(self, path: str) -> tuple[EvalState, str] | None:
        if path.startswith("/e/"):
            quoted, _, rest = path[3:].partition("/")
            state = self._evals.get(unquote(quoted))
            return (state, "/" + rest) if state is not None else None
        if self._default_eval is not None:
            return self._evals[self._default_eval], path
        return None

    def _meters(self, state: EvalState) -> tuple[BudgetMeter, ...]:
        """The run's budget, the experiment's (if any), the eval's: a call needs a slot in each."""
        if state.column_meter is None:
            return (self.meter, state.meter)
        return (self.meter, state.column_meter, state.meter)

    def _acquire_budget(self, state: EvalState) -> str | None:
        return acquire_all(self._meters(state))

    def _release_budget(self, state: EvalState) -> None:
        release_all(self._meters(state))

    @contextmanager
    def _settling(self, state: EvalState, what: str) -> Iterator[None]:
        """Around answering a call and then counting it: until counted, the call (``what``) is pending
        for the eval's report and unsettled for every budget it counts against (a call under a tokens
        or usd cap waits for it)."""
        ticket = state.begin_pending(what)
        try:
            with settling(self._meters(state)):
                yield
        finally:
            state.end_pending(ticket)

    def _count(
        self, state: EvalState, key: tuple[str, int] | None, provider: str, usage: CallUsage, session: str
    ) -> float | None:
        """Count an answered call: the eval's record, and the tokens and dollars of every budget it counts against."""
        usd = call_cost(self.prices or {}, usage.models, usage.input_tokens, usage.output_tokens)
        state.count(key, provider, usage, session, usd)
        add_all(self._meters(state), usage.total_tokens, usd or 0.0)
        return usd

    def _log_call(self, state: EvalState, **fields: Any) -> None:
        """One call's compact record (evalrun.models.transcript), redacted like every message of the proxy."""
        from evalrun.models.transcript import call_record

        def make(number: int) -> dict[str, Any]:
            return self._redacted(call_record(number=number, **fields))

        try:
            state.log_call(make)
        except Exception as exc:  # noqa: BLE001 - a body the log cannot read never fails the call
            self.note(f"evalrun proxy: call not logged ({exc.__class__.__name__})")

    def _redacted(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._redact(value)
        if isinstance(value, dict):
            return {k: self._redacted(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redacted(v) for v in value]
        return value

    def _replay(
        self, handler: ProxyHandler, state: EvalState, session: str, method: str, path: str,
        headers: dict[str, str], body: bytes,
    ) -> None:
        index = state.take_index(session)
        value, sha = normalise_body(decoded_request_body(body, headers), _header(headers, "content-type"), self.secrets)
        chosen = choose(state, Call(session, index, method, path, value, sha), self.match)
        if isinstance(chosen, Refusal):
            message = self._redact(chosen.message)
            state.note_missing(chosen.key, message, chosen.missing)
            self.note(message)
            handler.send_error_json(chosen.status, chosen.kind, message)
            self._log_call(state, session=session, index=index, provider="", method=method, path=path,
                           request=decoded_request_body(body, headers), response=None, status=chosen.status,
                           fixture=chosen.missing, error=message)
            return
        response = chosen.response
        with self._settling(state, f"{state.name}/{session} call {index}"):
            try:
                if response.stream is not None:
                    # All of it at once, in one chunk: nothing is waited for, so nothing is gained by
                    # a send per event (and each would cost the client a wake-up). A usage chunk the
                    # proxy asked for is not the client's: it did not get it when recorded either.
                    events = response.stream
                    if _hides_usage(method, path, headers, body):
                        events = tuple(e for e in events if not is_usage_chunk(e))
                    handler.start_stream(response.status, response.headers)
                    handler.write_chunk("".join(events).encode("utf-8"), end=True)
                else:
                    handler.send_whole(response.status, response.headers, response.body)
            finally:
                usage = read_usage(response.body, response.stream or ())
                usd = self._count(state, None, chosen.provider, usage, session)
                self._log_call(
                    state, session=session, index=index, provider=chosen.provider, method=method, path=path,
                    request=decoded_request_body(body, headers), response=response.body, stream=response.stream or (),
                    status=response.status, model=", ".join(sorted(usage.models)) or None,
                    tokens=(usage.input_tokens, usage.output_tokens), usd=usd, fixture=chosen.file,
                )
                self.note(f"{state.name}/{session}#{index:04d} {method} {path.split('?', 1)[0]} -> "
                          f"{response.status} (fixture {chosen.index:04d})")

    def _relay(
        self, handler: ProxyHandler, state: EvalState, session: str, method: str, path: str,
        headers: dict[str, str], body: bytes,
    ) -> None:
        shown = path.split("?", 1)[0]
        style = api_style(path, headers)
        target = choose_target(self._upstream_for(state, style), path, style)
        sent_headers = upstream_headers(headers, style, self.key_env)
        # An OpenAI chat stream reports its tokens only when asked: ask, and keep the answer from a client
        # that did not (``usage.UsageChunks``); the fixture keeps the request as the client sent it.
        asked = _asking_for_usage(method, path, headers, body)
        prefetched: bytes | None = None  # an answer's body already read here
        try:
            conn, response = self._pool.request(target, method, sent_headers, asked if asked is not None else body)
            if asked is not None and response.status == 400 \
                    and not (response.getheader("content-type") or "").startswith("text/event-stream"):
                # A server that refuses stream_options (older OpenAI-compatible ones) gets the call as the
                # client made it: it works as without evalrun, and its stream is counted as uncounted.
                try:
                    prefetched = response.read()
                except (OSError, http.client.HTTPException) as exc:
                    conn.close()
                    raise UpstreamError(f"{target.base_url}: broke off the response ({exc.__class__.__name__})") from None
                if b"stream_options" in prefetched:
                    self._pool.give_back(target.base_url, conn, response)
                    asked, prefetched = None, None
                    conn, response = self._pool.request(target, method, sent_headers, body)
        except UpstreamError as exc:
            self._release_budget(state)
            message = self._redact(f"evalrun proxy: upstream {exc} ({state.name}/{session}: {method} {shown}); "
                                   f"{_check_upstream(style)}")
            state.note_missing(None, message)
            self.note(message)
            handler.send_error_json(424, "evalrun_upstream_unreachable", message)
            self._log_call(state, session=session, index=0, provider=target.provider, method=method, path=path,
                           request=decoded_request_body(body, headers), response=None, status=424, error=message)
            return
        reply_headers = {k.lower(): v for k, v in response.getheaders() if k.lower() not in HOP_HEADERS}
        streamed = reply_headers.get("content-type", "").startswith("text/event-stream")
        # A stream's client may have all it needs ([DONE]) and be gone long before the upstream ends
        # the stream: from its first byte on, the call is pending, so the eval's report waits for it.
        ticket = state.begin_pending(f"{state.name}/{session}: {method} {shown} (a stream not ended yet)") if streamed else None
        # Once the client has the answer's end event it may call again before the upstream ends the stream:
        # from that event on, the call is unsettled for every budget it counts against (``_settle_at_answer_end``).
        ended_early: list[tuple[BudgetMeter, ...]] = []
        try:
            self._pass_on(handler, state, session, method, path, headers, body, target, conn, response,
                          reply_headers, streamed, ended_early, hide_usage=asked is not None, prefetched=prefetched)
        finally:
            for meters in ended_early:
                end_settling(meters)
            if ticket is not None:
                state.end_pending(ticket)

    def _upstream_for(self, state: EvalState, style: str) -> str | None:
        """The upstream of a call of ``style`` by ``state``'s eval: its own, else the proxy's (None: the provider's API)."""
        own = self._eval_upstreams.get(_eval_key(state.name, state.repeat), {})
        return own.get(style) or self.upstreams.get(style) or self.upstream

    def _settle_at_answer_end(
        self, state: EvalState, raw: bytearray, new: int, ended_early: list[tuple[BudgetMeter, ...]]
    ) -> bool:
        """Before the piece that holds a stream's end event reaches the client, make the call unsettled
        for its budgets: a call the client makes next waits for this one's tokens (a stream that never
        says its end is unsettled from its last byte, as a plain answer is). True for that piece."""
        if not ended_early and answer_ended(raw, new):
            meters = self._meters(state)
            begin_settling(meters)
            ended_early.append(meters)
            return True
        return False

    @staticmethod
    def _relay_piece(
        handler: ProxyHandler, state: EvalState, session: str, piece: bytes, ends: bool, placed: list[int]
    ) -> None:
        """Send a piece of a stream on. The piece that ``ends`` the answer (its end event) first takes the
        call's index in its session: an SDK returns at that event and may call again at once, while the
        upstream has yet to end the stream, and that next call must come after this one, as the code made
        them (a suite replayed by index depends on it). If the end never reached the client, the index is
        given back (the attempt was abandoned; its retry takes the place)."""
        if ends and not handler.client_gone():
            placed.append(state.take_index(session))
        handler.write_chunk(piece, watch=True)
        if ends and placed and handler.client_gone():
            state.give_back_index(session, placed.pop())

    def _pass_on(
        self, handler: ProxyHandler, state: EvalState, session: str, method: str, path: str,
        headers: dict[str, str], body: bytes, target: Target, conn: http.client.HTTPConnection,
        response: http.client.HTTPResponse, reply_headers: dict[str, str], streamed: bool,
        ended_early: list[tuple[BudgetMeter, ...]], *, hide_usage: bool = False, prefetched: bytes | None = None,
    ) -> None:
        """Relay the upstream's answer to the client, then count it and hand its fixture to the writer.
        ``hide_usage``: the proxy asked for a stream's usage chunk the client did not: it is counted and
        recorded, never sent to the client."""
        shown = path.split("?", 1)[0]
        decoder = content_decoder(reply_headers.get("content-encoding", ""))
        if decoder is not None:
            del reply_headers["content-encoding"]  # the client gets, and the fixture keeps, the decoded body
        recordable = decoder is not None or not reply_headers.get("content-encoding", "").strip()
        recorded: RecordedResponse | None
        raw = bytearray()
        placed: list[int] = []  # a stream's index, taken as its end event went to the client
        placeable = response.status not in NOT_AN_ANSWER  # an answer from the wrong place takes no index
        try:
            if streamed:
                handler.start_stream(response.status, reply_headers)
                kept = UsageChunks() if hide_usage else None
                for chunk in body_pieces(response):  # all that has arrived, in one send to the client
                    chunk = decoder.decompress(chunk) if decoder is not None else chunk
                    raw += chunk
                    ended = self._settle_at_answer_end(state, raw, len(chunk), ended_early)
                    # relayed as it arrives, not when the call ends
                    self._relay_piece(handler, state, session, kept.feed(chunk) if kept is not None else chunk,
                                      ended and placeable, placed)
                if decoder is not None and (tail := decoder.flush()):
                    raw += tail
                    ended = self._settle_at_answer_end(state, raw, len(tail), ended_early)
                    self._relay_piece(handler, state, session, kept.feed(tail) if kept is not None else tail,
                                      ended and placeable, placed)
                if kept is not None:
                    handler.write_chunk(kept.flush(), watch=True)
                recorded = None  # split into events once the client has the stream's end
            else:
                data = prefetched if prefetched is not None else response.read()
                if decoder is not None:
                    data = decoder.decompress(data, MAX_DECODED_BYTES)
                    if decoder.unconsumed_tail:
                        raise zlib.error(f"the answer inflates beyond {MAX_DECODED_BYTES} bytes")
                    data += decoder.flush()
                recorded = RecordedResponse(response.status, reply_headers, body=data)
        except (OSError, http.client.HTTPException, zlib.error) as exc:
            conn.close()
            message = self._redact(
                f"evalrun proxy: upstream {target.base_url} broke off the response ({exc.__class__.__name__})"
            )
            state.note_missing(None, message)
            self.note(message)
            handler.close_connection = True
            if not streamed:  # nothing sent yet: an answer the SDK does not retry, not a dropped connection
                handler.send_error_json(424, "evalrun_upstream_broke_off", message)
            return
        self._pool.give_back(target.base_url, conn, response)
        # An attempt its client abandoned (timed out, disconnected) is no answer: its retry takes the index.
        # A stream whose end event reached the client is answered whole, whatever the client did next.
        abandoned = (handler.client_gone() and not placed) if streamed else handler.peer_closed()
        # Nor is an answer from the wrong place (a 404 from another provider's upstream, a refused key):
        # never recorded, so t2 cannot replay it as the answer; the eval fails, naming the URL called.
        wrong_place = NOT_AN_ANSWER.get(response.status)
        recording = self.mode == "record" and not abandoned and recordable and not wrong_place
        if placed:
            index = placed[0]
        else:
            index = state.take_index(session) if not (abandoned or wrong_place) else 0
        with self._settling(state, f"{state.name}/{session} call {index}"):
            try:
                # The client has its last byte first; counting, notes and the fixture follow. A report
                # of the eval, and a call under a tokens or usd cap, wait for them (``_settling``).
                if recorded is None:
                    handler.end_stream()
                else:
                    handler.send_whole(recorded.status, reply_headers, recorded.body)
            finally:
                if recorded is None:
                    text = raw.decode("utf-8", errors="replace")
                    recorded = RecordedResponse(response.status, reply_headers, stream=tuple(_events(text)))
                try:
                    usage = read_usage(recorded.body, recorded.stream or ())
                    key = (session, index) if not (abandoned or wrong_place) else None
                    usd = self._count(state, key, target.provider, usage, session)
                    if streamed and response.status < 300 and not usage.total_tokens \
                            and _asks_for_usage_now(method, path, headers, body):
                        with state.lock:  # asked for and still not reported: uncounted, and said so
                            state.uncounted_calls += 1
                    if not abandoned:
                        self._log_call(
                            state, session=session, index=index, provider=target.provider, method=method, path=path,
                            request=decoded_request_body(body, headers), response=recorded.body,
                            stream=recorded.stream or (), status=response.status,
                            model=", ".join(sorted(usage.models)) or None,
                            tokens=(usage.input_tokens, usage.output_tokens), usd=usd,
                            fixture=fixture_path(state.fixtures_dir, session, index)
                            if recording and state.fixtures_dir is not None else None,
                        )
                    outcome = "abandoned by the client, not recorded" if abandoned else self.mode
                    self.note(f"{state.name}/{session}#{index:04d} {method} {shown} -> {response.status} ({outcome})")
                    if wrong_place and not abandoned:
                        style = api_style(path, headers)
                        state.note_missing(None, self._redact(
                            f"evalrun {self.mode}: {state.name}/{session}: {method} {target.base_url}{target.path.split('?', 1)[0]} "
                            f"answered {response.status} ({wrong_place}){'; not recorded' if self.mode == 'record' else ''}: "
                            f"{_check_upstream(style)}"
                        ))
                    if self.mode == "record" and not recordable:
                        state.note_missing(None, self._redact(
                            f"evalrun record: {state.name}/{session} call {index}: the upstream answered with "
                            f"content-encoding {reply_headers['content-encoding']!r}, which evalrun cannot decode; "
                            "not recorded (use an upstream that honours Accept-Encoding: identity, gzip or deflate)"
                        ))
                finally:
                    if recording:
                        self._recorder.submit(state, FixtureToWrite(
                            session, index, target.provider, method, path, headers,
                            decoded_request_body(body, headers), recorded,
                        ))

    def _redact(self, text: str) -> str:
        return scrub(text, self.secrets | {self.token})

    def note(self, line: str) -> None:
        """One line for the log callback (``evalrun replay serve`` prints them)."""
        if self._log is not None:
            self._log(self._redact(line))


# Upstream statuses that are no answer of the model's but a sign of the wrong upstream or key: never recorded
# (t2 would replay them as the answer), and the eval fails naming the URL. Other errors (400, 429, 5xx) are the
# API's behaviour a suite may record on purpose (a 500 with x-should-retry: false, a 429 and its retry).
NOT_AN_ANSWER = {
    401: "the upstream refused the key",
    403: "the upstream refused the key",
    404: "no such endpoint there: is it this provider's base URL?",
    405: "no such endpoint there: is it this provider's base URL?",
    407: "an HTTP proxy wants credentials",
    421: "the upstream says the request reached the wrong server",
}

# The event that ends a streamed answer: OpenAI's chat ``[DONE]``, its Responses API's last event,
# Anthropic's ``message_stop``. The SDKs stop reading there; the upstream may end the stream later.
_ANSWER_END = re.compile(
    rb"^(?:data: ?\[DONE\]|event: ?(?:message_stop|response\.(?:completed|incomplete|failed)))\r?$", re.MULTILINE
)
_ANSWER_END_SPAN = 64  # bytes before a new piece searched again: an end event split across two pieces is found


def answer_ended(raw: bytes | bytearray, new: int) -> bool:
    """Whether the stream so far (``raw``, of which the last ``new`` bytes just arrived) holds its end event."""
    return _ANSWER_END.search(raw, max(0, len(raw) - new - _ANSWER_END_SPAN)) is not None


def _asking_for_usage(method: str, path: str, headers: Mapping[str, str], body: bytes) -> bytes | None:
    """The body the proxy sends upstream for an OpenAI chat stream that does not ask for its usage (asking
    for it), else None. The SDKs' stream=True does not ask, and a stream without usage counts 0 tokens."""
    if method != "POST" or not path.split("?", 1)[0].endswith("/chat/completions"):
        return None
    if api_style(path, headers) != "openai" or _header(headers, "content-encoding"):
        return None
    return ask_for_usage(body)


def _check_upstream(style: str) -> str:
    """The fix named when an upstream is unreachable or answers from the wrong place."""
    return (f"check the {style} upstream ([models] upstream.{style}, EVALRUN_UPSTREAM_{style.upper()}; "
            "the run's first lines say where it was set)")


def _asks_for_usage_now(method: str, path: str, headers: Mapping[str, str], body: bytes) -> bool:
    """An OpenAI chat stream whose usage was asked for, by its client or by the proxy."""
    if method != "POST" or not path.split("?", 1)[0].endswith("/chat/completions") or api_style(path, headers) != "openai":
        return False
    return _asking_for_usage(method, path, headers, body) is not None or b'"include_usage"' in body


def _hides_usage(method: str, path: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether the proxy asks for usage on this call's behalf, and so keeps the usage chunk from its client."""
    return _asking_for_usage(method, path, headers, body) is not None


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
