"""The Python scorer SDK: count assertions per check and write the report.

This module owns the scorer side of the scorer contract (DESIGN.md): a
program that evalrun runs as a subprocess opens named checks, makes
assertions inside them, records metrics, and leaves a JSON report at
``EVALRUN_REPORT``::

    from evalrun import scorer

    with scorer.check("rows are isolated per tenant") as c:
        c.equal(len(rows_a), 3)
        c.true(not rows_b, "tenant B saw nothing")
        c.evidence(f"state: {rows_a!r}")

    scorer.metric("time_to_ready_ms", 1840)

It is stdlib only and imports nothing else from evalrun but its private
siblings ``evalrun.scorer.messages`` (the text of messages, evidence and the
by-hand summary) and ``evalrun.scorer.judging`` (the model call of
``Check.judge``), stdlib only too and loaded on first use, so a scorer pays a
few milliseconds for it and needs none of evalrun's dependencies.

Checks. ``check(name)`` is a context manager. Every assertion made on it
counts one; the first failed assertion ends the check with its message (the
rest of the block is skipped, so later assertions do not count). An
unexpected exception inside the block fails that check with
``"ValueError: boom"`` as its message and the traceback as its evidence, and
is swallowed, so later checks still run. A check that asserted nothing is
reported as failed ("asserted nothing"), as the runner would judge it anyway.
Misusing the SDK (a duplicate check name, an assertion outside its ``with``
block, a metric that is not a number, string or bool) raises ``ScorerError``,
which is never swallowed: a broken scorer must crash, not fail a check.

When the report is written. Atomically (a temp file beside it, then
``os.replace``) when every check starts (naming it as ``"running"``), after
every check that ends and every metric, so the file on disk always holds
everything recorded so far: a scorer killed by a timeout or crashing still
leaves the checks that ran, and the name of the one it was in. It is written a
last time by ``finish()``, or at interpreter exit if the module-level
functions were used and ``finish()`` was not called: a scorer made of
``with scorer.check(...)`` blocks needs no boilerplate.

Exit status. Under evalrun (``EVALRUN_REPORT`` set) the report carries pass
and fail; the exit status only says whether the scorer ran to completion.
So ``finish()`` exits 0 even when checks failed, a scorer that simply ends
exits 0, and one that dies of an uncaught exception exits 1 -- which the
runner counts as a crash whatever the report says. Run by hand
(``EVALRUN_REPORT`` unset) nothing is written; a summary is printed on stdout,
one line per check, and the exit status is 1 if any check failed or none ran,
so the author sees the verdict at the terminal. Without an explicit
``finish()`` that status is set at interpreter exit with ``os._exit(1)``
after flushing stdout and stderr (Python offers no other way to change it
there); exit handlers registered before this module was imported are then
skipped, which is why a scorer that cares calls ``scorer.finish()``.

``Scorer`` is the same thing as an explicit object, for tests and programs
that write several reports: ``Scorer.finish()`` returns the exit status
instead of exiting, and nothing about an explicit ``Scorer`` happens at
interpreter exit. Only the module-level ``check``/``metric``/``finish`` use a
default instance, created on first use.
"""

from __future__ import annotations

import atexit
import itertools
import json
import math
import os
import re
import stat
import sys
import threading

# typing costs ~3 ms to import; annotations are strings here, so only type
# checkers need it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType, TracebackType
    from typing import Any, NoReturn, Pattern

__all__ = ["Check", "Scorer", "ScorerError", "check", "finish", "metric"]

_REPORT_ENV = "EVALRUN_REPORT"


def _messages() -> ModuleType:
    """``evalrun.scorer.messages``, imported the first time there is text to build.

    Deferred so that importing the SDK loads this one module and nothing else
    from evalrun (test_import_pulls_in_only_the_stdlib holds it to that): the
    import stays as cheap as it was, and a scorer whose checks all pass without
    evidence never loads the sibling.
    """
    from evalrun.scorer import messages

    return messages


class ScorerError(Exception):
    """The scorer misused the SDK. Never recorded as a check failure: it crashes the scorer."""


class _CheckFailed(BaseException):
    """Ends a check at its first failed assertion.

    A BaseException so that a scorer's own ``except Exception`` cannot
    swallow it and let the check carry on as if it had passed.
    """

    def __init__(self, check: Check) -> None:
        super().__init__(check.message)
        self.check = check


class _Raises:
    """The context-manager form of ``Check.raises``; ``value`` holds the caught exception."""

    def __init__(self, check: Check, expected: Any, match: str | Pattern[str] | None, msg: str | None) -> None:
        self._check = check
        self._expected = expected
        self._match = match
        self._msg = msg
        self.value: BaseException | None = None

    def __enter__(self) -> _Raises:
        self._check._require_open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        if isinstance(exc, (_CheckFailed, ScorerError)):
            return False  # an assertion inside the block failed: that is the story, not this
        if exc is not None and not isinstance(exc, self._expected) and not isinstance(exc, Exception):
            return False  # KeyboardInterrupt, SystemExit: not ours to turn into a check failure
        self.value = self._check._judge_raised(self._expected, exc, self._match, self._msg)
        return True


class Check:
    """One named check: a context manager whose assertion methods each count one.

    Make it with ``Scorer.check`` or the module-level ``check``; use it only
    inside its ``with`` block.
    """

    def __init__(self, scorer: Scorer, name: str) -> None:
        self._scorer = scorer
        self.name = name
        self.assertions = 0
        self.passed = True
        self.message: str | None = None
        self._evidence: list[str] = []
        self._judges: list[str] = []  # the identity of each judge asked ("model#rubric-hash"), in order
        self._state = "new"  # new -> open -> done

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> Check:
        if self._state != "new":
            raise ScorerError(f"check {self.name!r} was already used; make a new check for each with block")
        self._state = "open"
        self._scorer._check_started()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        swallow = False
        if exc is None:
            pass
        elif isinstance(exc, _CheckFailed) and exc.check is self:
            swallow = True  # our own failed assertion: already recorded
        elif isinstance(exc, _CheckFailed):
            self._record_failure(f"ended early: check {exc.check.name!r} failed inside it")
        elif isinstance(exc, ScorerError):
            self._record_failure(_messages().describe(exc))
        elif isinstance(exc, Exception):
            self._record_failure(_messages().describe(exc))
            if not self._evidence:
                self._evidence.append(_messages().format_traceback(exc))
            swallow = True
        else:
            # KeyboardInterrupt, SystemExit: the process is leaving, and this
            # check did not run to its end, so it cannot be reported as passed.
            self._record_failure(f"did not finish: {_messages().describe(exc)}")
        if self.passed and self.assertions == 0:
            self._record_failure("asserted nothing")
        self._state = "done"
        self._scorer._check_done()
        return swallow

    def evidence(self, text: Any) -> None:
        """Attach evidence (the state that explains the outcome); repeated calls add lines.

        Attach it before the assertions it explains: a failed assertion ends
        the ``with`` block, so a call after it is never reached.
        """
        self._require_open()
        if not isinstance(text, str):
            m = _messages()
            text = m.show(text, limit=m.EVIDENCE_LIMIT)
        self._evidence.append(text)

    def as_dict(self) -> dict[str, Any]:
        """This check as it appears in the report."""
        out: dict[str, Any] = {"name": self.name, "assertions": self.assertions, "passed": self.passed}
        if self.message is not None:
            m = _messages()
            out["message"] = m.truncate(self.message, m.MESSAGE_LIMIT)
        if self._evidence:
            m = _messages()
            out["evidence"] = m.truncate("\n".join(self._evidence), m.EVIDENCE_LIMIT)
        if self._judges:
            from evalrun.scorer import judging

            out["judge"] = judging.combined_identity(self._judges)
        return out

    # -- assertions --------------------------------------------------------

    def equal(self, actual: Any, expected: Any, msg: str | None = None) -> None:
        """Assert ``actual == expected``."""
        if not self._count(actual == expected):
            m = _messages()
            self._fail(msg, f"expected {m.show(expected)}, got {m.show(actual)}" + m.first_difference(actual, expected))

    def not_equal(self, actual: Any, unexpected: Any, msg: str | None = None) -> None:
        """Assert ``actual != unexpected``."""
        if not self._count(actual != unexpected):
            self._fail(msg, f"expected anything but {_messages().show(unexpected)}, got it")

    def true(self, value: Any, msg: str | None = None) -> None:
        """Assert that ``value`` is truthy."""
        if not self._count(bool(value)):
            self._fail(msg, f"expected a true value, got {_messages().show(value)}")

    def false(self, value: Any, msg: str | None = None) -> None:
        """Assert that ``value`` is falsy."""
        if not self._count(not value):
            self._fail(msg, f"expected a false value, got {_messages().show(value)}")

    def is_none(self, value: Any, msg: str | None = None) -> None:
        """Assert ``value is None``."""
        if not self._count(value is None):
            self._fail(msg, f"expected None, got {_messages().show(value)}")

    def is_not_none(self, value: Any, msg: str | None = None) -> Any:
        """Assert ``value is not None``; returns it, so ``row = c.is_not_none(fetch())`` reads."""
        if not self._count(value is not None):
            self._fail(msg, "expected a value, got None")
        return value

    def is_instance(self, value: Any, cls: type | tuple[type, ...], msg: str | None = None) -> None:
        """Assert ``isinstance(value, cls)``."""
        if not self._count(isinstance(value, cls)):
            m = _messages()
            self._fail(msg, f"expected an instance of {m.type_names(cls)}, got {type(value).__name__} {m.show(value)}")

    def contains(self, container: Any, item: Any, msg: str | None = None) -> None:
        """Assert ``item in container``."""
        if not self._count(item in container):
            m = _messages()
            self._fail(msg, f"expected {m.show(container)} to contain {m.show(item)}")

    def not_contains(self, container: Any, item: Any, msg: str | None = None) -> None:
        """Assert ``item not in container``."""
        if not self._count(item not in container):
            m = _messages()
            self._fail(msg, f"expected {m.show(container)} not to contain {m.show(item)}")

    def matches(self, text: str, pattern: str | Pattern[str], msg: str | None = None) -> re.Match[str] | None:
        """Assert that the regex ``pattern`` is found in ``text`` (``re.search``); returns the match."""
        found = re.search(pattern, text)
        if not self._count(found is not None):
            m = _messages()
            self._fail(msg, f"expected {m.show(text)} to match {m.show_pattern(pattern)}")
        return found

    def less(self, actual: Any, bound: Any, msg: str | None = None) -> None:
        """Assert ``actual < bound``."""
        if not self._count(actual < bound):
            m = _messages()
            self._fail(msg, f"expected a value < {m.show(bound)}, got {m.show(actual)}")

    def at_most(self, actual: Any, bound: Any, msg: str | None = None) -> None:
        """Assert ``actual <= bound``."""
        if not self._count(actual <= bound):
            m = _messages()
            self._fail(msg, f"expected a value <= {m.show(bound)}, got {m.show(actual)}")

    def greater(self, actual: Any, bound: Any, msg: str | None = None) -> None:
        """Assert ``actual > bound``."""
        if not self._count(actual > bound):
            m = _messages()
            self._fail(msg, f"expected a value > {m.show(bound)}, got {m.show(actual)}")

    def at_least(self, actual: Any, bound: Any, msg: str | None = None) -> None:
        """Assert ``actual >= bound``."""
        if not self._count(actual >= bound):
            m = _messages()
            self._fail(msg, f"expected a value >= {m.show(bound)}, got {m.show(actual)}")

    def close(
        self, actual: float, expected: float, msg: str | None = None, *, rel: float = 1e-9, abs: float = 0.0
    ) -> None:
        """Assert that two numbers are equal within ``rel``/``abs`` tolerance (``math.isclose``)."""
        if not self._count(math.isclose(actual, expected, rel_tol=rel, abs_tol=abs)):
            m = _messages()
            self._fail(msg, f"expected {m.show(expected)} (rel={rel}, abs={abs}), got {m.show(actual)}")

    def judge(
        self, subject: Any, rubric: str, *, ground_truth: Any = None, model: str | None = None
    ) -> str:
        """Ask a model whether ``subject`` meets ``rubric``; one assertion, its reason the evidence.

        The model (``model``, else the manifest's ``[models] judge``) is asked
        through evalrun's proxy, so t2 replays the verdict and t3 calls (and
        budgets) it; in t1 the check fails: "judge() needs a model: t2 replays
        one, t3 calls one". A reply that is no verdict fails the check with the
        raw reply as evidence. Returns the reason of a passing verdict.
        """
        self._require_open()
        from evalrun.scorer import judging  # stdlib only; loaded by scorers that judge

        outcome = judging.ask(subject, rubric, ground_truth, model)
        if outcome.identity:
            self._judges.append(outcome.identity)
        if outcome.problem is not None:
            if outcome.raw:
                self._evidence.append(f"judge reply: {outcome.raw}")
            self._count(False)
            self._fail(None, outcome.problem)
        self._evidence.append(f"judge: {outcome.reason}")
        if not self._count(outcome.passed):
            self._fail(None, f"judge: fails the rubric: {outcome.reason}")
        return outcome.reason

    def fail(self, msg: str) -> NoReturn:
        """Fail the check here, unconditionally (counts one assertion)."""
        self._count(False)
        self._fail(None, msg)

    def raises(
        self,
        expected: type[BaseException] | tuple[type[BaseException], ...],
        func: Callable[..., Any] | None = None,
        /,
        *args: Any,
        match: str | Pattern[str] | None = None,
        msg: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Assert that ``expected`` is raised, optionally with a message matching ``match``.

        Two forms: ``with c.raises(PermissionError, match="denied") as caught:``
        (the exception is then ``caught.value``), or
        ``err = c.raises(ValueError, int, "x")``, which calls ``int("x")`` and
        returns the exception. A different exception fails the check, naming both.
        """
        if func is None:
            if args or kwargs:
                raise ScorerError("raises(): arguments given without a function to call")
            return _Raises(self, expected, match, msg)
        self._require_open()
        try:
            func(*args, **kwargs)
        except (_CheckFailed, ScorerError):
            raise
        except BaseException as exc:  # noqa: BLE001 -- judged below, re-raised if not ours
            if not isinstance(exc, expected) and not isinstance(exc, Exception):
                raise
            return self._judge_raised(expected, exc, match, msg)
        return self._judge_raised(expected, None, match, msg)

    # -- internals ---------------------------------------------------------

    def _require_open(self) -> None:
        if self._state != "open":
            where = "before its with block" if self._state == "new" else "after its with block ended"
            raise ScorerError(f"check {self.name!r} used {where}; assert inside `with ... as c:`")

    def _count(self, ok: bool) -> bool:
        self._require_open()
        self.assertions += 1
        return ok

    def _fail(self, msg: str | None, detail: str) -> NoReturn:
        self._record_failure(f"{msg}: {detail}" if msg else detail)
        raise _CheckFailed(self)

    def _record_failure(self, message: str) -> None:
        if self.passed:  # the first failure is the one that explains the check
            self.passed = False
            self.message = message

    def _judge_raised(
        self,
        expected: Any,
        exc: BaseException | None,
        match: str | Pattern[str] | None,
        msg: str | None,
    ) -> BaseException:
        m = _messages()
        names = m.type_names(expected)
        if exc is None:
            self._count(False)
            self._fail(msg, f"expected {names} to be raised, nothing was raised")
        if not isinstance(exc, expected):
            self._count(False)
            self._fail(msg, f"expected {names}, got {m.describe(exc)}")
        if match is not None and re.search(match, str(exc)) is None:
            self._count(False)
            self._fail(msg, f"expected {names} matching {m.show_pattern(match)}, got {m.describe(exc)}")
        self._count(True)
        return exc


class Scorer:
    """A set of checks and metrics that becomes one report.

    ``report_path`` defaults to ``$EVALRUN_REPORT``; with neither, the scorer
    runs by hand: nothing is written and ``finish()`` prints a summary.
    """

    def __init__(self, report_path: str | os.PathLike[str] | None = None) -> None:
        if report_path is None:
            report_path = os.environ.get(_REPORT_ENV) or None
        self.report_path: str | None = os.fspath(report_path) if report_path is not None else None
        self._checks: list[Check] = []
        self._names: set[str] = set()
        self._metrics: dict[str, int | float | str | bool] = {}
        self._lock = threading.RLock()
        self._exit_code: int | None = None

    def check(self, name: str) -> Check:
        """Open a named check; use it as ``with s.check("...") as c:``. Names are unique."""
        if not isinstance(name, str) or not name.strip():
            raise ScorerError(f"check name must be a non-empty string, got {name!r}")
        with self._lock:
            self._require_unfinished()
            if name in self._names:
                raise ScorerError(
                    f"duplicate check name {name!r}: baselines count assertions per name, so each check needs its own"
                )
            self._names.add(name)
            made = Check(self, name)
            self._checks.append(made)
            return made

    def metric(self, name: str, value: int | float | str | bool) -> None:
        """Record a metric (shown, never asserted). Recording a name again replaces its value."""
        if not isinstance(name, str) or not name.strip():
            raise ScorerError(f"metric name must be a non-empty string, got {name!r}")
        if not isinstance(value, (int, float, str, bool)):
            raise ScorerError(f"metric {name!r}: value must be a number, string or bool, got {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN or infinity; keep what was measured as text
        with self._lock:
            self._require_unfinished()
            self._metrics[name] = value
            self._write_if_reporting()

    def report(self) -> dict[str, Any]:
        """The report as it stands: the checks that have ended, the metrics, and the check
        in progress (``running``) if one is open, so a scorer stopped by a timeout is
        reported with the checks it finished and the one it was in."""
        with self._lock:
            done = [c.as_dict() for c in self._checks if c._state == "done"]
            report: dict[str, Any] = {"checks": done, "metrics": dict(self._metrics)}
            running = next((c.name for c in self._checks if c._state == "open"), None)
            if running is not None:
                report["running"] = running
            return report

    def finish(self) -> int:
        """Write the report (or print the summary, by hand) and return the exit status.

        Under evalrun the status is 0: the scorer ran to completion and the
        report says what passed. By hand it is 1 if any check failed or none
        ran. Calling it again returns the same status and does nothing else.
        """
        with self._lock:
            if self._exit_code is not None:
                return self._exit_code
            still_open = [c.name for c in self._checks if c._state == "open"]
            if still_open:
                raise ScorerError(f"finish() called while check {still_open[0]!r} is open; call it after the with block")
            report = self.report()
            if self.report_path is not None:
                _write_atomic(self.report_path, report)
                self._exit_code = 0
            else:
                sys.stdout.write(_messages().summarize(report))
                sys.stdout.flush()
                failed = not report["checks"] or any(not c["passed"] for c in report["checks"])
                self._exit_code = 1 if failed else 0
            return self._exit_code

    @property
    def finished(self) -> bool:
        return self._exit_code is not None

    def _check_started(self) -> None:
        with self._lock:
            if self._exit_code is None:
                self._write_if_reporting()

    def _check_done(self) -> None:
        with self._lock:
            if self._exit_code is None:
                self._write_if_reporting()

    def _write_if_reporting(self) -> None:
        # A report in progress goes to a file only: into a FIFO or /dev/stdout each one would be another report.
        if self.report_path is not None and not _writes_in_place(self.report_path):
            _write_atomic(self.report_path, self.report())

    def _require_unfinished(self) -> None:
        if self._exit_code is not None:
            raise ScorerError("the scorer has already finished; open checks and record metrics before finish()")


# -- the module-level default instance --------------------------------------

_default: Scorer | None = None
_default_lock = threading.Lock()


def _default_scorer() -> Scorer:
    global _default
    with _default_lock:
        if _default is None:
            _default = Scorer()
        return _default


def check(name: str) -> Check:
    """Open a named check on the default scorer: ``with scorer.check("...") as c:``."""
    return _default_scorer().check(name)


def metric(name: str, value: int | float | str | bool) -> None:
    """Record a metric on the default scorer."""
    _default_scorer().metric(name, value)


def finish() -> NoReturn:
    """End the scorer: write the report (or print the summary) and exit.

    Exits 0 under evalrun; by hand, 1 if any check failed or none ran.
    Optional: the same happens at interpreter exit when it is not called.
    """
    sys.exit(_default_scorer().finish())


def _finish_default_at_exit() -> None:
    # Only a default scorer that was used: a program that merely imports this
    # module (a test suite, evalrun itself) must not have its exit altered,
    # nor an explicit Scorer's report overwritten with an empty one.
    scorer = _default
    if scorer is None or scorer.finished:
        return
    try:
        code = scorer.finish()
    except BaseException as exc:  # noqa: BLE001 -- at exit there is no one left to raise to
        sys.stderr.write(f"evalrun.scorer: could not finish the report: {_messages().describe(exc)}\n")
        code = 1
    if code != 0:
        # By hand, a failing run must exit non-zero and Python gives an exit
        # handler no other way to say so. Under evalrun this is reached only
        # when the report could not be written, which is a crash.
        _flush_std_streams()
        os._exit(code)


# Registered at import, i.e. as early as the scorer allows: exit handlers run
# last-registered first, so this one runs after those registered later and
# the os._exit above skips as few as possible.
atexit.register(_finish_default_at_exit)


# -- helpers ------------------------------------------------------------------

_tmp_counter = itertools.count()


_OPEN_FILE_NAMES = ("/dev/stdout", "/dev/stderr")
_OPEN_FILE_FOLDERS = ("/dev/fd/", "/proc/")


def _writes_in_place(path: str) -> bool:
    """``evalrun.atomic.writes_in_place``, for this stdlib-only SDK (a test holds the two alike).

    A device, FIFO or socket, or the name of an open file (``EVALRUN_REPORT=/dev/stdout``
    to read a report by hand) is written into: renaming over it would, as root,
    turn ``/dev/stdout`` into a regular file.
    """
    absolute = os.path.abspath(path)
    if absolute in _OPEN_FILE_NAMES or absolute.startswith(_OPEN_FILE_FOLDERS):
        return True
    try:
        mode = os.stat(absolute).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_atomic(path: str, report: dict[str, Any]) -> None:
    """Write ``report`` as JSON to ``path``: a temp file in the same directory, then os.replace.

    No fsync: the aim is that evalrun never reads a torn file when the
    scorer dies mid-write, not durability across a power cut. The temp name
    is built by hand because ``tempfile`` costs more to import than this SDK.
    What is not a file (``_writes_in_place``) is appended to instead.
    """
    data = (json.dumps(report, indent=2) + "\n").encode("ascii")  # ensure_ascii: any string encodes
    if _writes_in_place(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return
    directory, base = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{base}.{os.getpid()}.{next(_tmp_counter)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 -- a closed stream is not worth a traceback at exit
            pass
