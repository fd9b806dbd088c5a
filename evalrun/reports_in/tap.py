"""Reading TAP (versions 12 to 14) from a scorer's saved stdout into checks.

This module owns what a TAP stream means to evalrun:

- each top-level test point is a check with one assertion; a point with
  subtests (TAP 14 indented blocks, Perl's ``subtest``, node's test runner)
  asserts as many times as it has leaf points below it, recursively;
- a ``# TODO`` point passes whatever its status (TAP semantics); its message
  says whether it failed as expected or passes now;
- a ``# SKIP`` point is not a check (see ``evalrun.reports_in.parsed``); ``1..0 # SKIP
  why`` skips the whole stream;
- the YAML diagnostic block of a failed point gives its message (the
  ``message:`` field, else node's ``error:``, else the block) and evidence;
  ``#`` comment lines after a failed point are evidence too, never its message;
- ``Bail out!``, a plan that does not match the points that ran, a missing
  plan, points out of sequence and a stream that ends inside a YAML block are
  eval-level problems: the stream cannot be trusted to be complete.

The stream is read line by line and never held whole; nothing here raises on
bad input: a garbled stream is a ``problem``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.reports_in.parsed import NameDeduper, ParsedReport
from evalrun.text import EVIDENCE_LIMIT, one_line, truncate
from evalrun.results import CheckResult

_POINT = re.compile(r"^(?P<not>not\s+)?ok(?=\s|$)\s*(?P<num>\d+(?=\s|$))?\s*(?:-(?=\s|$))?\s*(?P<rest>.*)$")
_PLAN = re.compile(r"^1\.\.(?P<n>\d+)\s*(?:#\s*(?P<why>.*))?$")
_DIRECTIVE = re.compile(r"^\s*(?P<kind>skip|todo)\S*(?:\s+(?P<why>.*))?$", re.IGNORECASE)
_SUBTEST = re.compile(r"^#\s*Subtest(?::\s*(?P<name>.*))?$")
_BLOCK_SCALAR = re.compile(r"^[|>][-+]?\d*$")
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
    room: int = _DIAG_LIMIT  # characters of YAML and comments still kept: bounded however long the stream

    def keep(self, lines: list[str], line: str) -> None:
        if self.room > 0:
            lines.append(line)
            self.room -= len(line) + 1

    @property
    def name(self) -> str:
        return self.description or f"test {self.number if self.number is not None else self.ordinal}"

    @property
    def keeps_details(self) -> bool:
        return not self.ok or self.directive == "todo"


@dataclass
class _Frame:
    """One nesting level: the top-level stream or one subtest block."""

    indent: int
    name: str | None = None
    points: list[_Point] = field(default_factory=list)
    plans: list[tuple[int, str | None]] = field(default_factory=list)
    pending: _Summary | None = None  # the subtest block just closed, waiting for its parent point


def parse_tap(path: Path) -> ParsedReport:
    """Translate a TAP stream saved in ``path`` into checks; never raises on bad input."""
    try:
        handle = path.open("r", encoding="utf-8", errors="replace", newline=None)
    except OSError as exc:
        problem = f"no TAP output to read ({exc.strerror or exc.__class__.__name__}): {path.name}"
        return ParsedReport(checks=[], metrics={}, problem=problem, source="TAP")
    with handle:
        parser = _Parser()
        for line in handle:
            if not parser.feed(line.rstrip("\r\n")):
                break
    return parser.finish()


class _Parser:
    def __init__(self) -> None:
        self.root = _Frame(indent=0)
        self.stack: list[_Frame] = [self.root]
        self.last: _Point | None = None  # the point that a YAML block or comments may follow
        self.yaml_indent: int | None = None
        self.bail: str | None = None
        self.sequence_problem: str | None = None
        self.next_name: str | None = None

    def feed(self, line: str) -> bool:
        """Take one line; False once the stream has bailed out."""
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
            self._add_point(point, indent)
            return True
        plan = _PLAN.match(body.rstrip())
        if plan:
            frame = self._frame_at(indent)
            frame.plans.append((int(plan["n"]), plan["why"]))
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
            self.stack[-1].pending = _summarize(closed)
        top = self.stack[-1]
        if indent > top.indent:
            top = _Frame(indent=indent, name=self.next_name)
            self.next_name = None
            self.stack.append(top)
        return top

    def _add_point(self, match: re.Match[str], indent: int) -> None:
        frame = self._frame_at(indent)
        description, directive, reason = _split_directive(match["rest"])
        number = int(match["num"]) if match["num"] else None
        ordinal = len(frame.points) + 1
        if frame is self.root and number is not None and number != ordinal and self.sequence_problem is None:
            self.sequence_problem = f"test point numbered {number} where {ordinal} was expected"
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

    def finish(self) -> ParsedReport:
        self._frame_at(0)  # close subtest blocks left open by a truncated stream
        problems: list[str] = []
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
        checks, skipped = _to_checks(self.root.points)
        skip_all = None
        if self.root.plans and self.root.plans[0][0] == 0 and not self.root.points:
            skip_all = _skip_reason(self.root.plans[0][1]) or "the plan is 1..0"
        return ParsedReport(
            checks=checks,
            metrics={},
            problem="; ".join(problems) or None,
            skipped=skipped,
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
    if planned != ran:
        return f"planned {planned}, ran {ran}"
    return None


def _skip_reason(comment: str | None) -> str | None:
    if not comment:
        return None
    directive = _DIRECTIVE.match(comment)
    if directive and directive["kind"].lower() == "skip":
        return (directive["why"] or "").strip() or None
    return None


def _split_directive(rest: str) -> tuple[str, str | None, str]:
    """Split ``desc # SKIP why`` into description, directive and reason; ``\\#`` is a literal hash."""
    out: list[str] = []
    i = 0
    while i < len(rest):
        char = rest[i]
        if char == "\\" and i + 1 < len(rest) and rest[i + 1] in "#\\":
            out.append(rest[i + 1])
            i += 2
            continue
        if char == "#":
            directive = _DIRECTIVE.match(rest[i + 1 :])
            if directive:
                kind = directive["kind"].lower()
                return "".join(out).strip(), kind, (directive["why"] or "").strip()
        out.append(char)
        i += 1
    return "".join(out).strip(), None, ""


def _weight(point: _Point) -> int:
    """Assertions a point stands for: its leaf points if it has subtests, else one."""
    if point.directive == "skip":
        return 0
    if point.sub is not None and (point.sub.leaves or point.sub.all_skipped):
        return point.sub.leaves
    return 1


def _summarize(frame: _Frame) -> _Summary:
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
            message = _point_message(point)
            summary.failures.append(f"{point.name}: {message}" if message else point.name)
        elif point.ok and point.sub is not None and point.sub.problem:
            summary.failures.append(f"{point.name}: {point.sub.problem}")
    summary.all_skipped = bool(frame.points) and skipped == len(frame.points)
    planned = frame.plans[0][0] if frame.plans else None
    if planned is not None and planned != len(frame.points):
        label = f"subtest {frame.name!r}" if frame.name else "subtest"
        summary.problem = f"{label} planned {planned}, ran {len(frame.points)}"
    return summary


def _to_checks(points: list[_Point]) -> tuple[list[CheckResult], list[str]]:
    names = NameDeduper()
    checks: list[CheckResult] = []
    skipped: list[str] = []
    for point in points:
        name = names.unique(point.name)
        weight = _weight(point)
        if weight == 0:
            reason = point.reason if point.directive == "skip" else "all its subtests were skipped"
            skipped.append(f"{name} ({reason})" if reason else name)
            continue
        checks.append(_to_check(point, name, weight))
    return checks, skipped


def _to_check(point: _Point, name: str, weight: int) -> CheckResult:
    sub = point.sub
    if point.directive == "todo":
        why = f"TODO {point.reason}" if point.reason else "TODO"
        state = "fails as expected" if not point.ok else "passes now; remove the TODO"
        return CheckResult(name=name, assertions=weight, passed=True, message=f"{why}: {state}")
    failures = sub.failures if sub is not None else []
    passed = point.ok and not (sub is not None and sub.problem)
    if passed:
        return CheckResult(name=name, assertions=weight, passed=True)
    if failures:
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        message = one_line(failures[0]) + more
    elif point.ok and sub is not None and sub.problem:
        message = sub.problem
    else:
        message = _point_message(point)
    evidence_parts = [f"failed: {failure}" for failure in failures]
    if point.yaml:
        evidence_parts.append("\n".join(point.yaml))
    if point.diag:
        evidence_parts.append("\n".join(point.diag))
    evidence = truncate("\n".join(evidence_parts)) if evidence_parts else None
    return CheckResult(name=name, assertions=weight, passed=False, message=message, evidence=evidence)


def _point_message(point: _Point) -> str | None:
    """A failed point's message: YAML ``message:``, else node's ``error:``, else the block."""
    if point.yaml:
        for key in ("message", "error"):
            value = _yaml_field(point.yaml, key)
            if value:
                return one_line(value)
        text = "\n".join(point.yaml).strip()
        if text:
            return one_line(text)
    # Comments are evidence, not the message: a note printed after a failure need not be about it.
    return None


def _yaml_field(lines: list[str], key: str) -> str | None:
    """A top-level scalar of a YAML block, read without a YAML library (none is a dependency)."""
    prefix = f"{key}:"
    for index, line in enumerate(lines):
        if not line.startswith(prefix):
            continue
        value = line[len(prefix) :].strip()
        following = []
        for more in lines[index + 1 :]:
            if more.strip() and not more.startswith(" "):
                break
            following.append(more)
        if _BLOCK_SCALAR.match(value):
            text = "\n".join(_dedent(following))
            return text.replace("\n", " ") if value.startswith(">") else text
        continued = " ".join(part.strip() for part in following if part.strip())
        return _unquote(f"{value} {continued}".strip() if continued else value)
    return None


def _dedent(lines: list[str]) -> list[str]:
    widths = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    cut = min(widths, default=0)
    return [line[cut:] for line in lines]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            decoded = json.loads(value)
        except ValueError:
            return value[1:-1]
        return decoded if isinstance(decoded, str) else value[1:-1]
    return value
