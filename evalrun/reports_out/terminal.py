"""What the user sees: progress, one line per finished eval, the summary.

On a terminal: a live progress bar (rich) and coloured status words. In CI or
when piped: plain lines, no escape codes. ``NO_COLOR`` (any non-empty value)
turns colour off everywhere. Lines are printed as evals finish, so a CI log
shows progress on a long run too.

The console is the last gate before the screen: every line is scrubbed of
secrets, then neutralised (``evalrun.text.neutralise``), so text from a scorer,
a report or the history is one inert line whatever it holds: no escape code, no
line GitHub reads as a workflow command. evalrun's own annotations go out
through ``command`` alone.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any

from evalrun.results import EvalResult, Status
from evalrun.secrets import scrub
from evalrun.text import neutralise, plural

_WORDS = {
    Status.PASSED: ("PASS", "green"),
    Status.FAILED: ("FAIL", "red"),
    Status.ERROR: ("ERROR", "red"),
    Status.TIMEOUT: ("TIMEOUT", "red"),
    Status.SKIPPED: ("SKIP", "yellow"),
    Status.INTERRUPTED: ("INTERRUPTED", "magenta"),
    Status.BUDGET: ("BUDGET", "yellow"),
}


def wants_color(stream: IO[str], env: Mapping[str, str]) -> bool:
    if env.get("NO_COLOR"):
        return False
    if env.get("FORCE_COLOR"):
        return True
    return stream.isatty() and env.get("TERM") != "dumb"


class Console:
    """A thread-safe printer that is rich on a terminal and plain elsewhere."""

    def __init__(
        self, stream: IO[str] | None = None, env: Mapping[str, str] | None = None, secrets: Iterable[str] = ()
    ) -> None:
        env = os.environ if env is None else env
        self._secrets = set(secrets)  # scrubbed from every line: the last gate before the screen
        self.stream = stream or sys.stdout
        self.color = wants_color(self.stream, env)
        self.live = self.stream.isatty() and not env.get("CI") and env.get("TERM") != "dumb"
        self._lock = threading.Lock()
        self._rich: Any = None
        self._progress: Any = None
        self._task: Any = None
        self._label = ""
        self._running: list[str] = []
        self._running_lock = threading.Lock()
        self._calls: Callable[[str], int | None] | None = None
        self._total = self._done = 0
        # Plain output's progress line, every this many seconds (EVALRUN_PROGRESS_INTERVAL; 0: never).
        self._interval = _interval(env.get("EVALRUN_PROGRESS_INTERVAL", ""))
        self._beat: threading.Thread | None = None
        self._beat_stop: threading.Event | None = None
        self._closed = False
        if self.color or self.live:
            from rich.console import Console as RichConsole

            self._rich = RichConsole(
                file=self.stream, no_color=not self.color, highlight=False, soft_wrap=True,
                emoji=False,  # a check named ":cross_mark:" is shown as named, as markup is escaped
            )

    # -- lines ---------------------------------------------------------------
    def line(self, text: str, style: str | None = None) -> None:
        """One line; whatever ``text`` holds, it is shown as one line and can never become a command."""
        text = self._shown(text)
        with self._lock:
            if self._rich is not None:
                from rich.markup import escape

                markup = f"[{style}]{escape(text)}[/]" if style and self.color else escape(text)
                target = self._progress.console if self._progress is not None else self._rich
                target.print(markup)
            else:
                self._write(text)

    def command(self, text: str) -> None:
        """A workflow command evalrun wrote itself (``::error ...``); the rest of the line still neutralised."""
        if not text.startswith("::"):
            raise ValueError(f"not a workflow command: {text[:40]!r}")
        text = "::" + self._shown(text[2:])
        with self._lock:
            self._write(text)  # plain: GitHub reads it only where evalrun prints plain lines

    def _shown(self, text: str) -> str:
        """Redacted, then neutralised: the order every text leaving evalrun takes (cut in between, by callers)."""
        return neutralise(scrub(text, self._secrets) if self._secrets else text)

    def _write(self, text: str) -> None:
        """A plain line; a reader that went away (``| head -1``) stops the printing, never the run."""
        if self._closed:
            return
        text = _encodable(text, getattr(self.stream, "encoding", None) or "utf-8")
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (BrokenPipeError, ValueError):
            self._closed = True

    def note(self, text: str) -> None:
        self.line(text, "cyan")

    def warn(self, text: str) -> None:
        self.line(text, "yellow")

    def error(self, text: str) -> None:
        self.line(text, "bold red")

    def eval_finished(self, result: EvalResult) -> None:
        word, style = _WORDS[result.status]
        # A pass keeps its counts in front of a note (flaky checks, a process it left running).
        detail = f"{_counts(result)}; {result.message}" if result.status is Status.PASSED and result.message else (
            result.message or _counts(result)
        )
        text = self._shown(f"{word:<11} {result.name}  {detail}")
        if result.status is Status.PASSED:
            text += f"  ({result.duration_s:.1f} s)"
        with self._lock:
            if self._rich is not None:
                from rich.markup import escape

                w = f"[{style}]{word:<11}[/]" if self.color else f"{word:<11}"
                body = escape(text[len(f"{word:<11}") :])
                target = self._progress.console if self._progress is not None else self._rich
                target.print(w + body)
                if self._progress is not None:
                    self._progress.advance(self._task)
            else:
                self._write(text)
        with self._running_lock:
            self._done += 1
            if result.name in self._running:
                self._running.remove(result.name)

    def eval_started(self, name: str) -> None:
        """The progress line names the evals that are running."""
        with self._running_lock:
            self._running.append(name)

    def running_text(self) -> str:
        """``triage[mini] 3 calls, triage[nano] +2``: the evals running now, with their model calls so far."""
        # Not ``_lock``: the live line renders this while a line being printed holds ``_lock``.
        with self._running_lock:
            running = list(self._running)
        parts = []
        for name in running[:3]:
            calls = self._calls(name) if self._calls is not None else None
            parts.append(f"{name} {plural(calls, 'call')}" if calls else name)
        if len(running) > 3:
            parts.append(f"+{len(running) - 3} more")
        return self._shown(", ".join(parts))  # names are scorer-adjacent text: neutralised like every line

    # -- progress ------------------------------------------------------------
    def start_progress(self, total: int, label: str, calls: Callable[[str], int | None] | None = None) -> None:
        """A live line on a terminal; elsewhere (CI, a pipe) a plain line every so often while evals run.

        ``calls(name)``: the model calls an eval made so far, or None when it uses no model.
        """
        self._label, self._calls, self._total, self._done = label, calls, total, 0
        if total == 0:
            return
        if not self.live or self._rich is None:
            if self._interval > 0:
                self._beat_stop = threading.Event()
                self._beat = threading.Thread(target=self._heartbeat, name="evalrun-progress", daemon=True)
                self._beat.start()
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self._progress = Progress(
            _RunningColumn(self),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self._rich,
            transient=True,
        )
        self._task = self._progress.add_task(label, total=total)
        self._progress.start()

    def _heartbeat(self) -> None:
        """Plain output: one line per interval while something runs, so a CI log shows a long run is alive."""
        started = time.monotonic()
        while self._beat_stop is not None and not self._beat_stop.wait(self._interval):
            text = self.running_text()
            if text:
                elapsed = int(time.monotonic() - started)
                self.line(f"{self._label}: {self._done}/{self._total} done, running ({elapsed} s): {text}")

    def stop_progress(self) -> None:
        if self._beat_stop is not None:
            self._beat_stop.set()
            if self._beat is not None and self._beat is not threading.current_thread():
                self._beat.join(timeout=5)
            self._beat_stop = self._beat = None
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    # -- summary -------------------------------------------------------------
    def summary(self, results: Sequence[EvalResult]) -> None:
        if not results:
            return
        rows = [
            (
                self._shown(r.name),
                _WORDS[r.status][0],
                str(len(r.checks)),
                str(sum(c.assertions for c in r.checks)),
                f"{r.duration_s:.1f} s",
            )
            for r in results
        ]
        header = ("eval", "status", "checks", "assertions", "time")
        if self._rich is not None and self.color:
            from rich.markup import escape
            from rich.table import Table

            table = Table(*header, title=None, show_lines=False)
            for row, r in zip(rows, results):
                table.add_row(escape(row[0]), f"[{_WORDS[r.status][1]}]{row[1]}[/]", *row[2:])
            with self._lock:
                self._rich.print(table)
            return
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(header, widths)).rstrip()]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
        for ln in lines:
            self.line(ln)


PROGRESS_INTERVAL_S = 30.0  # plain output: a progress line this often while evals run


def _interval(value: str) -> float:
    try:
        return max(0.0, float(value)) if value.strip() else PROGRESS_INTERVAL_S
    except ValueError:
        return PROGRESS_INTERVAL_S


class _RunningColumn:
    """The live line's text: the tier and the evals running now with their calls, read at every refresh."""

    def __new__(cls, console: Console) -> Any:  # rich is imported only when a live line is shown
        from rich.progress import ProgressColumn
        from rich.text import Text

        class RunningColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                running = console.running_text()
                return Text(f"{console._label}: {running}" if running else console._label)

        return RunningColumn()


def closing_line(results: Sequence[EvalResult]) -> str:
    """``N passed, N failed, N skipped`` (plus any interrupted or budget-stopped)."""
    passed = sum(r.status is Status.PASSED for r in results)
    failed = sum(r.status.is_failure for r in results)
    skipped = sum(r.status is Status.SKIPPED for r in results)
    text = f"{passed} passed, {failed} failed, {skipped} skipped"
    budget = sum(r.status is Status.BUDGET for r in results)
    interrupted = sum(r.status is Status.INTERRUPTED for r in results)
    if budget:
        text += f", {budget} not checked (budget)"
    if interrupted:
        text += f", {interrupted} interrupted"
    tests = sum(len(r.skipped_tests) for r in results)
    if tests:  # tests the scorers' own reports skipped, inside evals that ran: never hidden behind "0 skipped"
        text += f" ({plural(tests, 'test')} skipped inside evals)"
    return text


_PLAIN_MARKS = str.maketrans({"●": "+", "○": "-", "…": "...", "–": "-"})


def _encodable(text: str, encoding: str) -> str:
    """``text`` as the stream can take it: a repeated check's ●○ marks become + and - in ASCII or Latin-1."""
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        return text.translate(_PLAIN_MARKS).encode(encoding, errors="replace").decode(encoding, errors="replace")


TAIL_LINES = 30  # lines of a failing eval's output shown by -v


def output_tails(results: Sequence[EvalResult], lines: int = TAIL_LINES) -> list[str]:
    """``-v``: the last lines of each failing eval's output (already redacted), each indented under a header.

    Indented, and control characters shown as ``\\xNN``: a scorer's output cannot start
    a CI workflow command or move the terminal's cursor.
    """
    out: list[str] = []
    for r in results:
        if not r.status.is_failure:
            continue
        tail = [ln.rstrip() for ln in r.output_tail.splitlines()]
        while tail and not tail[-1]:
            tail.pop()
        if not tail:
            out.append(f"--- {r.name}: no output")
            continue
        shown = tail[-lines:]
        cut = f", last {len(shown)} of {len(tail)} lines kept" if len(shown) < len(tail) else ""
        out.append(f"--- {r.name}: output tail ({_WORDS[r.status][0]}{cut})")
        out += [f"  | {neutralise(ln)}" for ln in shown]
    return out


def _counts(result: EvalResult) -> str:
    n = len(result.checks)
    a = sum(c.assertions for c in result.checks)
    return f"{plural(n, 'check')}, {plural(a, 'assertion')}"
