"""Reading TAP (versions 12 to 14) from a scorer's saved stdout into checks.

This module owns what a TAP stream means to evalrun:

- each top-level test point is a check with one assertion; a point with
  subtests (TAP 14 indented blocks, Perl's ``subtest``, node's test runner)
  asserts as many times as it has leaf points below it, recursively, and
  fails if any of them failed (a TODO one aside), even under a parent that
  says ``ok``;
- a ``# TODO`` point is an expected failure: a passing check whatever its
  status, its message says whether it failed as expected or passes now
  (``parsed.expected_failure_note``, as for pytest's xfail in JUnit);
- a ``# SKIP`` point is not a check (see ``evalrun.reports_in.parsed``); ``1..0 # SKIP
  why`` skips the whole stream;
- the YAML diagnostic block of a failed point gives its message (the
  ``message:`` field, else node's ``error:``, else the block) and evidence;
  without one, the ``#`` diagnostics that follow the point are its message
  (Test::More's ``got:``/``expected:``), or, as Test::More prints them on
  stderr, the ``Failed test 'name'`` block of the scorer's stderr that names it;
- ``Bail out!``, a plan that does not match the points that ran, a missing
  plan, points out of sequence and a stream that ends inside a YAML block are
  eval-level problems: the stream cannot be trusted to be complete.

The stream is read in bounded chunks (``evalrun.files``: a regular file, at
most 32 MiB), split into lines of at most ``LINE_LIMIT`` bytes (a longer line
is cut, its rest skipped), and every step is linear in the line: one huge line
or a line of a million ``#`` costs no more than reading it. At most
``CHECK_LIMIT`` points are read. Nothing here raises on bad input: a garbled
stream is a ``problem``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.files import FileReadError, iter_chunks
from evalrun.reports_in.parsed import (
    CHECK_LIMIT,
    NAME_LIMIT,
    REPORT_LIMIT,
    REPORT_WHAT,
    NameDeduper,
    ParsedReport,
    Skip,
    expected_failure_note,
)
from evalrun.reports_in.tap_diagnostics import find_test_more_blocks, fold_diagnostics, read_yaml_field
from evalrun.results import CheckResult
from evalrun.secrets import scrub
from evalrun.text import EVIDENCE_LIMIT, one_line, shorten, truncate

LINE_LIMIT = 64 * 1024  # bytes of one line kept; the rest of a longer line is skipped
_NUMBER_DIGITS = 18  # a point number or plan of more digits is no count any producer means
_POINT = re.compile(r"^(?P<not>not\s+)?ok(?=\s|$)\s*(?P<num>\d+(?=\s|$))?\s*(?:-(?=\s|$))?\s*(?P<rest>.*)$")
_PLAN = re.compile(r"^1\.\.(?P<n>\d+)\s*(?:#\s*(?P<why>.*))?$")
# No "^": matched at a position (pattern.match(text, pos)), so the text after a "#" is never copied.
_DIRECTIVE = re.compile(r"\s*(?P<kind>skip|todo)\S*(?:\s+(?P<why>.*))?$", re.IGNORECASE)
_SPECIAL = re.compile(r"[#\\]")
_SUBTEST = re.compile(r"^#\s*Subtest(?::\s*(?P<name>.*))?$")
_DIAG_LIMIT = 2 * EVIDENCE_LIMIT  # characters of comments kept per failed point, however long the stream


@dataclass
class _Summary:
    """What a finished subtest block contributes to the point that closes it."""

    leaves: int = 0
    failures: list[str] = field(default_factory=list)
    all_skipped: bool = False
    problem: str | None = None


@dataclass
class _Point:
    ok: bool
    number: int | None
    ordinal: int
    description: str
    directive: str | None  # "skip" or "todo"
    reason: str
    indent: int
    yaml: list[str] | None = None  # kept only for points whose details matter (failed or TODO)
    diag: list[str] = field(default_factory=list)
    sub: _Summary | None = None
    stderr: list[str] | None = None  # Test::More's diagnostics for this point, found on stderr
    room: int = _DIAG_LIMIT  # characters of YAML and comments still kept: bounded however long the stream

    def keep(self, lines: list[str], line: str) -> None:
        if self.room > 0:
            lines.append(line)
            self.room -= len(line) + 1

    @property
    def name(self) -> str:
        return self.description or f"test {self.number if self.number is not None else self.ordinal}"

    @property
    def failed(self) -> bool:
        return not self.ok and self.directive != "todo"

    @property
    def keeps_details(self) -> bool:
        return not self.ok or self.directive == "todo"


@dataclass
class _Frame:
    """One nesting level: the top-level stream or one subtest block."""

    indent: int
    name: str | None = None
    points: list[_Point] = field(default_factory=list)
    plans: list[tuple[int | None, str | None]] = field(default_factory=list)
    pending: _Summary | None = None  # the subtest block just closed, waiting for its parent point


def parse_tap(path: Path, stderr: str = "", secrets: Iterable[str] = ()) -> ParsedReport:
    """Translate a TAP stream saved in ``path`` into checks; never raises on bad input.

    ``stderr`` is the scorer's stderr (its tail), where Test::More writes the
    diagnostics of a failed point; ``secrets`` are scrubbed from every name,
    message and evidence before anything is cut.
    """
    parser = _Parser(find_test_more_blocks(stderr), tuple(secrets))
    read_problem = None
    try:
        for line in _lines(path):
            if not parser.feed(line):
                break
    except FileReadError as exc:
        if parser.lines == 0:
            problem = f"no TAP output to read: {path.name} {exc.reason}"
            return ParsedReport(checks=[], metrics={}, problem=problem, source="TAP")
        read_problem = f"the TAP output {exc.reason}: read up to there"
    return parser.finish(read_problem)


def _lines(path: Path) -> Iterator[str]:
    """The stream's lines, decoded (bad UTF-8 replaced), each cut to LINE_LIMIT bytes."""
    pending = bytearray()
    skipping = False  # inside a line already cut: drop bytes up to its newline
    for chunk in iter_chunks(path, REPORT_LIMIT, REPORT_WHAT):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not skipping:
                room = LINE_LIMIT - len(pending)
                pending += piece[:room]
                if len(piece) > room:
                    skipping = True
            if end < 0:
                break
            yield _decode(pending)
            pending.clear()
            skipping = False
            start = end + 1
    if pending or skipping:
        yield _decode(pending)


def _decode(raw: bytearray) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r")


class _Parser:
    def __init__(self, stderr_blocks: dict[str | None, deque[list[str]]] | None = None,
                 secrets: tuple[str, ...] = ()) -> None:
        self.stderr_blocks = stderr_blocks or {}
        self.secrets = secrets  # known before the first line: a subtest's summary is scrubbed before it is cut
        self.lines = 0
        self.points = 0
        self.root = _Frame(indent=0)
        self.stack: list[_Frame] = [self.root]
        self.last: _Point | None = None  # the point that a YAML block or comments may follow
        self.yaml_indent: int | None = None
        self.bail: str | None = None
        self.sequence_problem: str | None = None
        self.next_name: str | None = None

    def feed(self, line: str) -> bool:
        """Take one line; False once the stream has bailed out or holds too many points."""
        self.lines += 1
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        if self.yaml_indent is not None:
            if self._feed_yaml(line, body, indent):
                return True
        if body.startswith("Bail out!"):
            self.bail = " ".join(body.split())
            return False
        point = _POINT.match(body)
        if point:
            if self.points >= CHECK_LIMIT:
                self.bail = f"more than {CHECK_LIMIT:,} test points, the most evalrun reads from one stream"
                return False
            self.points += 1
            self._add_point(point, indent)
            return True
        plan = _PLAN.match(body.rstrip())
        if plan:
            frame = self._frame_at(indent)
            frame.plans.append((_number(plan["n"]), plan["why"]))
            self.last = None
            return True
        if body.rstrip() == "---" and self.last is not None and indent == self.last.indent + 2:
            self.yaml_indent = indent
            if self.last.keeps_details:
                self.last.yaml = []
            return True
        if body.startswith("#"):
            self._add_comment(body, indent)
        # Anything else (TAP version, pragmas, stray output) is ignored, as the TAP specs ask.
        return True

    def _feed_yaml(self, line: str, body: str, indent: int) -> bool:
        """Consume a line of an open YAML block; False if the line ended the block implicitly."""
        assert self.yaml_indent is not None
        if body.rstrip() == "..." and indent == self.yaml_indent:
            self.yaml_indent = None
            self.last = None
            return True
        if not body or indent >= self.yaml_indent:
            if self.last is not None and self.last.yaml is not None:
                self.last.keep(self.last.yaml, line[self.yaml_indent :])
            return True
        # A dedented line inside a block: the producer forgot the "..."; close the block and read on.
        self.yaml_indent = None
        self.last = None
        return False

    def _frame_at(self, indent: int) -> _Frame:
        """The frame a line at ``indent`` belongs to, closing or opening subtest blocks."""
        while len(self.stack) > 1 and indent < self.stack[-1].indent:
            closed = self.stack.pop()
            self.stack[-1].pending = _summarize(closed, self.secrets)
        top = self.stack[-1]
        if indent > top.indent:
            top = _Frame(indent=indent, name=self.next_name)
            self.next_name = None
            self.stack.append(top)
        return top

    def _add_point(self, match: re.Match[str], indent: int) -> None:
        frame = self._frame_at(indent)
        description, directive, reason = _split_directive(match["rest"])
        number = _number(match["num"]) if match["num"] else None
        ordinal = len(frame.points) + 1
        if frame is self.root and match["num"] and number != ordinal and self.sequence_problem is None:
            shown = shorten(match["num"], 24)
            self.sequence_problem = f"test point numbered {shown} where {ordinal} was expected"
        point = _Point(
            ok=match["not"] is None,
            number=number,
            ordinal=ordinal,
            description=description,
            directive=directive,
            reason=reason,
            indent=indent,
            sub=frame.pending,
        )
        frame.pending = None
        frame.points.append(point)
        self.last = point
        if point.failed:
            blocks = self.stderr_blocks.get(description or None)
            if blocks:
                point.stderr = blocks.popleft()

    def _add_comment(self, body: str, indent: int) -> None:
        subtest = _SUBTEST.match(body.rstrip())
        if subtest:
            name = (subtest["name"] or "").strip() or None
            if indent > self.stack[-1].indent:
                self._frame_at(indent).name = name
            else:
                self.next_name = name  # node announces a subtest at its parent's indent
            return
        last = self.last
        if last is not None and last.keeps_details:
            last.keep(last.diag, body)

    def finish(self, read_problem: str | None = None) -> ParsedReport:
        secrets = self.secrets
        self._frame_at(0)  # close subtest blocks left open by a truncated stream
        problems: list[str] = [read_problem] if read_problem else []
        if self.bail is not None:
            problems.append(self.bail)
        else:
            if self.yaml_indent is not None:
                where = f" of {self.last.name!r}" if self.last is not None else ""
                problems.append(f"the stream ends inside the YAML block{where}: it was cut short")
            plan_problem = _check_plan(self.root)
            if plan_problem:
                problems.append(plan_problem)
            if self.sequence_problem:
                problems.append(self.sequence_problem)
        checks, skipped = _to_checks(self.root.points, secrets)
        skip_all = None
        if self.root.plans and self.root.plans[0][0] == 0 and not self.root.points and not problems:
            skip_all = _skip_reason(self.root.plans[0][1]) or "the plan is 1..0"
        return ParsedReport(
            checks=checks,
            metrics={},
            problem="; ".join(problems) or None,
            skips=skipped,
            skip_all=skip_all,
            source="TAP",
        )


def _check_plan(root: _Frame) -> str | None:
    ran = len(root.points)
    if len(root.plans) > 1:
        return f"{len(root.plans)} plans (1..N lines) in one stream; a producer prints one"
    if not root.plans:
        if ran == 0:
            return "no test points"
        return f"no plan (1..N line) after {ran} test points: the stream may have been cut short"
    planned = root.plans[0][0]
    if planned is None:
        return f"the plan's count has more than {_NUMBER_DIGITS} digits; ran {ran}"
    if planned != ran:
        return f"planned {planned}, ran {ran}"
    return None


def _number(digits: str) -> int | None:
    """A point number or plan count; None for one too long to be meant (int() refuses 4,300+ digits)."""
    return int(digits) if len(digits) <= _NUMBER_DIGITS else None


def _skip_reason(comment: str | None) -> str | None:
    if not comment:
        return None
    directive = _DIRECTIVE.match(comment)
    if directive and directive["kind"].lower() == "skip":
        return (directive["why"] or "").strip() or None
    return None


def _split_directive(rest: str) -> tuple[str, str | None, str]:
    """Split ``desc # SKIP why`` into description, directive and reason; ``\\#`` is a literal hash.

    Linear in ``rest``: each ``#`` is tried in place, and a failed try stops at
    the first character that is not whitespace, ``skip`` or ``todo``.
    """
    out: list[str] = []
    i = 0
    n = len(rest)
    while i < n:
        j = _next_special(rest, i)
        out.append(rest[i:j])
        if j >= n:
            break
        char = rest[j]
        if char == "\\":
            if j + 1 < n and rest[j + 1] in "#\\":
                out.append(rest[j + 1])
                i = j + 2
            else:
                out.append(char)
                i = j + 1
            continue
        directive = _DIRECTIVE.match(rest, j + 1)
        if directive:
            return "".join(out).strip(), directive["kind"].lower(), (directive["why"] or "").strip()
        out.append(char)
        i = j + 1
    return "".join(out).strip(), None, ""


def _next_special(text: str, start: int) -> int:
    """Index of the next ``#`` or backslash at or after ``start``; ``len(text)`` if none."""
    found = _SPECIAL.search(text, start)
    return found.start() if found else len(text)


def _weight(point: _Point) -> int:
    """Assertions a point stands for: its leaf points if it has subtests, else one."""
    if point.directive == "skip":
        return 0
    if point.sub is not None and (point.sub.leaves or point.sub.all_skipped):
        return point.sub.leaves
    return 1


def _summarize(frame: _Frame, secrets: tuple[str, ...]) -> _Summary:
    summary = _Summary()
    skipped = 0
    for point in frame.points:
        weight = _weight(point)
        if weight == 0:
            skipped += 1
            continue
        summary.leaves += weight
        if point.directive == "todo":
            continue
        inner = point.sub.failures if point.sub is not None else []
        summary.failures.extend(f"{point.name} > {failure}" for failure in inner)
        if not point.ok and not inner:
            message = _point_message(point, secrets)
            summary.failures.append(f"{point.name}: {message}" if message else point.name)
        elif point.ok and point.sub is not None and point.sub.problem:
            summary.failures.append(f"{point.name}: {point.sub.problem}")
    summary.all_skipped = bool(frame.points) and skipped == len(frame.points)
    planned = frame.plans[0][0] if frame.plans else None
    if frame.plans and planned != len(frame.points):
        label = f"subtest {frame.name!r}" if frame.name else "subtest"
        if planned is None:
            summary.problem = f"{label}'s plan has more than {_NUMBER_DIGITS} digits; ran {len(frame.points)}"
        else:
            summary.problem = f"{label} planned {planned}, ran {len(frame.points)}"
    return summary


def _to_checks(points: list[_Point], secrets: tuple[str, ...]) -> tuple[list[CheckResult], list[Skip]]:
    names = NameDeduper()
    checks: list[CheckResult] = []
    skipped: list[Skip] = []
    for point in points:
        name = names.unique(shorten(scrub(point.name, secrets), NAME_LIMIT))
        weight = _weight(point)
        if weight == 0:
            reason = point.reason if point.directive == "skip" else "all its subtests were skipped"
            reason = one_line(scrub(reason, secrets), 200)
            skipped.append(Skip(name, reason))
            continue
        checks.append(_to_check(point, name, weight, secrets))
    return checks, skipped


def _to_check(point: _Point, name: str, weight: int, secrets: tuple[str, ...]) -> CheckResult:
    sub = point.sub
    if point.directive == "todo":
        note = expected_failure_note("TODO", scrub(point.reason, secrets), failed=not point.ok)
        return CheckResult(name=name, assertions=weight, passed=True, message=one_line(note))
    failures = [scrub(failure, secrets) for failure in sub.failures] if sub is not None else []
    # A parent that says ``ok`` over a failed subtest (a hand-written or buggy producer) fails all the same.
    passed = point.ok and not failures and not (sub is not None and sub.problem)
    if passed:
        return CheckResult(name=name, assertions=weight, passed=True)
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        message = one_line(failures[0]) + more
    elif point.ok and sub is not None and sub.problem:
        message = one_line(scrub(sub.problem, secrets))
    else:
        message = _point_message(point, secrets)
    evidence_parts = [f"failed: {failure}" for failure in failures[:50]]
    for lines in (point.yaml, point.diag, point.stderr):
        if lines:
            evidence_parts.append("\n".join(lines))
    evidence = truncate(scrub("\n".join(evidence_parts), secrets)) if evidence_parts else None
    return CheckResult(name=name, assertions=weight, passed=False, message=message, evidence=evidence)


def _point_message(point: _Point, secrets: tuple[str, ...]) -> str | None:
    """A failed point's message: YAML ``message:``, else node's ``error:``, else the block;
    else the diagnostics that follow it in the stream, else its Test::More block from stderr."""
    text = None
    if point.yaml:
        for key in ("message", "error"):
            text = read_yaml_field(point.yaml, key)
            if text:
                break
        text = text or "\n".join(point.yaml).strip()
    text = text or fold_diagnostics(point.diag) or fold_diagnostics(point.stderr or [])
    return one_line(scrub(text, secrets)) if text else None
