"""Reading a JUnit XML file that a scorer wrote into checks.

This module owns what a JUnit report means to evalrun:

- each ``<testcase>``, at any depth, is a check named after where it sits:
  the names of its enclosing ``<testsuite>`` elements, outermost first, then
  ``classname.name`` (``name`` alone without a classname), joined by `` > ``
  (node: ``add > works``; pytest: ``test_x.test_adds``). Left out of the path:
  empty suite names, pytest's run-level suite (a top-level suite named
  ``pytest``), and the innermost suite when the classname already says it
  as whole dotted parts (Maven, Go, PHPUnit name the suite after the class). node's reporter writes
  the constant classname ``test``, which is read as no classname. So a name
  never depends on a position, and removing one test never renames another;
- a testcase's place is its ``<testsuite>`` element and its file (the
  ``file`` attribute of the testcase, else ``file``/``filepath`` of its suite).
  Testcases with the same name in one place are one check (pytest writes a
  second ``<testcase>`` for a teardown that errors after a failure): it fails
  if any of them failed, with every failure in its message. The same name in
  different places is never merged: where the report says each one's file and
  the files differ, each check's name starts with its file (``a.test.js >
  math > adds``; only the names that collide, so other names never change);
  otherwise (node's reporter and jest-junit by default write no file) the
  report is refused with one line naming both lines and the fix;
- its ``assertions`` attribute is its assertion count when present (a whole
  number, 0 to 1,000,000,000, ``3.0`` allowed: ``3.5`` is refused, not rounded),
  else the count evalrun's vitest/jest setup file recorded for it
  (``evalrun.reports_in.assertion_counts``; a testcase that ran without one is
  said in a note), else 1;
- ``<failure>`` or ``<error>`` fails it: the message is the ``message``
  attribute (else the text's first line; ``error: `` is prefixed for an
  ``<error>``), the text, cut to about 2 KB, is the evidence;
- an expected failure (pytest's ``<skipped type="pytest.xfail">``, node's
  ``<skipped type="todo">`` with a ``<failure>``) is a passing check with a
  note, as a TAP ``# TODO`` is (``parsed.expected_failure_note``);
- a todo that did not fail is not a check, listed with the skips: node writes
  the same ``<skipped type="todo">`` for an empty ``it.todo`` and for a todo
  whose body passes, so evalrun cannot count it as a pass. jest-junit writes
  ``it.todo`` as a bare testcase, the same as a pass: one whose testcase
  property ``status`` is ``todo`` (a one-line ``junitTestCaseProperties.js``)
  is a todo; without it, a suite that lists more bare testcases than its own
  counts give passes says so in a note, since evalrun cannot tell which;
- any other ``<skipped>`` makes it not a check (see ``evalrun.reports_in.parsed``).

The XML is read with the stdlib's expat in bounded chunks (``evalrun.files``),
streamed into small records, never into a tree: no element that evalrun does
not use is kept. Any DOCTYPE or ENTITY declaration is refused before it can
expand. An unusable file raises ``ReportError`` with one line naming the file,
the line and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from evalrun.errors import ReportError
from evalrun.files import FileReadError, iter_chunks
from evalrun.reports_in.assertion_counts import SEPARATOR, AssertionCounts
from evalrun.reports_in.crash_line import js_error_line
from evalrun.reports_in.parsed import (
    ASSERTIONS_LIMIT,
    CHECK_LIMIT,
    NAME_LIMIT,
    REPORT_LIMIT,
    REPORT_WHAT,
    ParsedReport,
    Skip,
    expected_failure_note,
)
from evalrun.results import CheckResult
from evalrun.secrets import scrub
from evalrun.text import EVIDENCE_LIMIT, one_line, plural, shorten, truncate

_TEXT_LIMIT = 2 * EVIDENCE_LIMIT  # characters of one failure's text kept while reading
_WHOLE = re.compile(r"(\d{1,10})(?:\.0+)?")  # "3" or "3.0"; "3.5" is refused, never rounded
_EXPECTED_FAILURE = {"pytest.xfail": "xfail", "todo": "TODO"}  # <skipped type=...> that means "expected to fail"
_NO_CLASSNAME = {"", "test"}  # node's reporter writes classname="test" for every testcase
_RUN_SUITE = "pytest"  # pytest's default junit_suite_name: names the run, not a group of tests
_NO_REASON = {"", "true"}  # node writes message="true" for a skip or todo given no reason
_RECIPES = "docs/recipes-junit.md"


class _Stop(Exception):
    def __init__(self, what: str, line: int | None) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


@dataclass
class _Outcome:
    tag: str  # failure, error or skipped
    type: str
    message: str
    text: list[str] = field(default_factory=list)
    room: int = _TEXT_LIMIT

    def add(self, data: str) -> None:
        if self.room > 0:
            self.text.append(data[: self.room])
            self.room -= len(data)

    @property
    def body(self) -> str:
        return "".join(self.text).strip()


@dataclass
class _Suite:
    """An open ``<testsuite>``: the path its testcases are named under, computed once when it opens."""

    depth: int
    path: str  # " > "-joined non-empty suite names down to this one, capped at NAME_LIMIT
    parent_path: str  # the same without the innermost non-empty name (dropped when the classname says it)
    last: str  # the innermost non-empty name
    number: int = 0  # which <testsuite> element of the file it is (1, 2, ...); 0: the root, no suite
    file: str = ""  # its file or filepath attribute, else its parent's
    name: str = ""
    line: int = 0
    counts: dict[str, str] = field(default_factory=dict)  # its own tests/failures/errors/skipped attributes
    cases: int = 0  # its own testcases
    bare: int = 0  # its own testcases that hold no outcome: passes (or jest-junit's todos)
    nested: bool = False  # it holds a <testsuite>: its counts may include the nested one's

    def child(self, depth: int, name: str, number: int, attrs: dict[str, str], line: int) -> _Suite:
        file = shorten((attrs.get("file") or attrs.get("filepath") or "").strip(), NAME_LIMIT) or self.file
        counts = {k: attrs[k] for k in ("tests", "failures", "errors", "skipped") if k in attrs}
        if not name:
            path, parent_path, last = self.path, self.parent_path, self.last
        elif len(self.path) >= NAME_LIMIT:  # already longer than a name can be: share, don't grow
            path, parent_path, last = self.path, self.path, name
        else:
            path, parent_path, last = shorten(f"{self.path} > {name}" if self.path else name, NAME_LIMIT), self.path, name
        return _Suite(depth, path, parent_path, last, number, file, shorten(name, 200), line, counts)


_ROOT = _Suite(0, "", "", "")


@dataclass
class _Case:
    name: str
    line: int
    assertions: str | None
    place: tuple[int, str]  # (its suite element's number, its file): same name, same place = one check
    outcomes: list[_Outcome] = field(default_factory=list)
    todo: bool = False  # its property "status" says "todo" (jest-junit with a testcase properties file)
    titles: tuple[str, ...] = ()  # the title paths and files its count is found by (``assertion_counts``)
    files: tuple[str, ...] = ()
    counted: int | None = None  # its count from evalrun's vitest/jest setup file


def parse_junit(
    path: Path, label: str | None = None, secrets: Iterable[str] = (), counts: AssertionCounts | None = None
) -> ParsedReport:
    """Translate the JUnit XML file at ``path``; ``label`` names it in messages (default: its name).

    ``counts``: what evalrun's vitest/jest setup file recorded (``assertion_counts``), the assertion
    count of each testcase it names that has no ``assertions`` attribute."""
    name = label or path.name
    reader = _Reader(name)
    reader.read(path)
    secrets = tuple(secrets)
    if counts is not None:
        _count(reader, counts, secrets)
    checks: list[CheckResult] = []
    skipped: list[Skip] = []
    for check_name, cases in reader.groups(secrets).items():
        check = _to_check(scrub(check_name, secrets), cases, name, secrets)
        if isinstance(check, CheckResult):
            checks.append(check)
        else:
            skipped.append(check)
    problem = None if checks or skipped else "no <testcase> in the report"
    notes = [scrub(note, secrets) for note in reader.notes]
    return ParsedReport(checks=checks, metrics={}, problem=problem, skips=skipped, source="JUnit", notes=notes)


class _Reader:
    """expat handlers that keep the suite path and each testcase's outcome, nothing else."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.depth = 0
        self.suites: list[_Suite] = []  # each open <testsuite>, innermost last
        self.case: _Case | None = None
        self.case_depth = -1
        self.outcome: _Outcome | None = None
        self.cases: list[_Case] = []
        self.suite_count = 0
        self.notes: list[str] = []
        self.parser = expat.ParserCreate()

    def read(self, path: Path) -> None:
        parser = self.parser
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = lambda *_: self._stop("DOCTYPE")
        parser.EntityDeclHandler = lambda *_: self._stop("ENTITY")
        parser.UnparsedEntityDeclHandler = lambda *_: self._stop("ENTITY")
        parser.ExternalEntityRefHandler = lambda *_args: 0  # never fetch anything
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._data
        parser.buffer_text = True
        name = self.label
        try:
            for chunk in iter_chunks(path, REPORT_LIMIT, REPORT_WHAT):
                parser.Parse(chunk, False)
            parser.Parse(b"", True)
        except FileReadError as exc:
            if exc.missing:
                fix = "the scorer did not write it - check the eval's junit path"
                raise ReportError(f"junit report {name}: no such file; {fix}") from None
            if exc.reason.startswith("is a directory"):
                raise ReportError(f"junit report {name}: is a directory; junit = must name the XML file") from None
            raise ReportError(f"junit report {name}: {exc.reason}; make the scorer write a JUnit XML file") from None
        except _Stop as exc:
            where = f"line {exc.line}: " if exc.line is not None else ""
            raise ReportError(f"junit report {name}: {where}{exc.what}") from None
        except expat.ExpatError as exc:
            reason = expat.ErrorString(exc.code) if exc.code else str(exc)
            raise ReportError(
                f"junit report {name}: not valid XML: line {exc.lineno}: {reason}; fix the scorer that writes it"
            ) from None

    def _stop(self, what: str) -> None:
        if what in ("DOCTYPE", "ENTITY"):
            what = f"{what} declarations are refused (entity expansion); make the scorer write plain JUnit XML"
        raise _Stop(what, self.parser.CurrentLineNumber)

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        if self.depth == 0 and tag not in ("testsuites", "testsuite"):
            raise _Stop(
                f"the root element is <{shorten(tag, 40)}>, not <testsuites> or <testsuite>; "
                f"point junit = at the JUnit XML the scorer writes",
                None,
            )
        self.depth += 1
        if self.case is not None:
            if self.depth == self.case_depth + 1 and tag in ("failure", "error", "skipped"):
                self.outcome = _Outcome(tag, attrs.get("type", ""), attrs.get("message", ""))
                self.case.outcomes.append(self.outcome)
            elif self.depth == self.case_depth + 2 and tag == "property" and attrs.get("name") == "status":
                self.case.todo = self.case.todo or attrs.get("value", "").strip() == "todo"
            return  # anything else inside a testcase (output, a nested testcase) is not read
        if tag == "testsuite":
            name = attrs.get("name", "").strip()
            if not self.suites and name == _RUN_SUITE:
                name = ""
            parent = self.suites[-1] if self.suites else _ROOT
            if self.suites:
                parent.nested = True  # never _ROOT: it is shared by every read
            self.suite_count += 1
            suite = parent.child(self.depth, name, self.suite_count, attrs, self.parser.CurrentLineNumber)
            self.suites.append(suite)
        elif tag == "testcase":
            if len(self.cases) >= CHECK_LIMIT:
                self._stop(f"more than {CHECK_LIMIT:,} testcases, the most evalrun reads from one report")
            ordinal = len(self.cases) + 1
            suite = self.suites[-1] if self.suites else _ROOT
            file = shorten((attrs.get("file") or "").strip(), NAME_LIMIT) or suite.file
            # A testcase outside every suite has a place of its own: nothing merges with it.
            number = suite.number if self.suites else -ordinal
            name = (attrs.get("name") or "").strip()
            classname = (attrs.get("classname") or "").strip()
            self.case = _Case(
                name=self._name(attrs, ordinal),
                line=self.parser.CurrentLineNumber,
                assertions=attrs.get("assertions"),
                place=(number, file),
                # vitest: classname = the file, name = the titles joined; jest-junit (the recipe's settings):
                # classname = the describe path, name = the title, file = the file.
                titles=(name, f"{classname}{SEPARATOR}{name}") if classname else (name,),
                files=(file, classname, suite.name),
            )
            self.case_depth = self.depth
            self.cases.append(self.case)

    def _end(self, tag: str) -> None:
        if self.outcome is not None and self.depth == self.case_depth + 1:
            self.outcome = None
        if self.case is not None and self.depth == self.case_depth:
            if self.suites:
                suite = self.suites[-1]
                suite.cases += 1
                suite.bare += not self.case.outcomes and not self.case.todo
            self.case = None
            self.case_depth = -1
        if self.suites and self.suites[-1].depth == self.depth:
            self._todo_note(self.suites.pop())
        self.depth -= 1

    def _todo_note(self, suite: _Suite) -> None:
        """jest-junit writes ``it.todo`` as a bare testcase, like a pass, but leaves it out of the suite's
        counts: say so when the counts give fewer passes than there are bare testcases."""
        if suite.nested or not suite.bare or len(self.notes) >= 10:
            return
        try:
            counts = {k: int(suite.counts[k]) for k in ("tests", "failures", "skipped")}
        except (KeyError, ValueError):
            return
        passes = counts["tests"] - counts["failures"] - counts["skipped"] - _int(suite.counts.get("errors"))
        todo = suite.bare - passes
        if 0 < todo <= suite.bare and counts["tests"] < suite.cases:
            where = f'suite "{suite.name}"' + (f" ({suite.file})" if suite.file else "") + f" at line {suite.line}"
            self.notes.append(
                f"{where} lists {suite.cases} testcases but counts {counts['tests']} tests: "
                f"{todo} {'is a todo' if todo == 1 else 'are todos'} written as passing, counted as passes here; "
                f"jest-junit marks them with a testcase property status (see {_RECIPES})"
            )

    def _data(self, data: str) -> None:
        if self.outcome is not None:
            self.outcome.add(data)

    def _name(self, attrs: dict[str, str], ordinal: int) -> str:
        name = (attrs.get("name") or "").strip() or f"testcase {ordinal}"
        classname = (attrs.get("classname") or "").strip()
        if classname in _NO_CLASSNAME:
            classname = ""
        suite = self.suites[-1] if self.suites else _ROOT
        path = suite.parent_path if classname and suite.last and _covers(classname, suite.last) else suite.path
        own = f"{classname}.{name}" if classname else name
        return shorten(f"{path} > {own}" if path else own, NAME_LIMIT)

    def groups(self, secrets: tuple[str, ...]) -> dict[str, list[_Case]]:
        """The testcases of each check, by its name: one place each (see the module's docstring)."""
        by_name: dict[str, list[_Case]] = {}
        for case in self.cases:
            by_name.setdefault(case.name, []).append(case)
        grouped: dict[str, list[_Case]] = {}
        for name, cases in by_name.items():
            places: dict[tuple[int, str], list[_Case]] = {}
            for case in cases:
                places.setdefault(case.place, []).append(case)
            if len(places) == 1:
                grouped.setdefault(name, []).extend(cases)
                continue
            files = [file for _, file in places]
            named = {place: shorten(f"{place[1]} > {name}", NAME_LIMIT) for place in places}
            if all(files) and len(set(files)) == len(files) and not any(n in by_name or n in grouped for n in named.values()):
                for place, own in places.items():
                    grouped[named[place]] = own
                continue
            first, second = (own[0] for own in list(places.values())[:2])
            same_file = first.place[1] and first.place[1] == second.place[1]
            apart = f"two suites of {first.place[1]}" if same_file else "places the report does not tell apart by file"
            raise ReportError(
                f"junit report {self.label}: testcase {shorten(scrub(name, secrets), 200)!r} at line {first.line} and line "
                f"{second.line}: the same name in {apart}, which evalrun will not merge into one check; "
                f"give the tests distinct names, or have the tool name its suites by file (see {_RECIPES})"
            )
        return grouped


def _count(reader: _Reader, counts: AssertionCounts, secrets: tuple[str, ...]) -> None:
    """Give each testcase its count from the setup file; say how many that ran have none (counted 1 each)."""
    missed: list[_Case] = []
    for case in reader.cases:
        if case.assertions is not None and case.assertions.strip():
            continue  # the report's own count wins
        case.counted = counts.lookup(case.titles, case.files)
        if case.counted is None and not case.todo and not any(o.tag == "skipped" for o in case.outcomes):
            missed.append(case)
    if missed:
        runner = "/".join(sorted(counts.runners)) or "vitest/jest"
        first = shorten(scrub(missed[0].name, secrets), 200)
        reader.notes.append(
            f"{plural(len(missed), 'testcase')} (first: {first!r}, line {missed[0].line}) "
            f"{'have' if len(missed) != 1 else 'has'} no assertion count from evalrun's {runner} setup file, "
            f"counted as 1 assertion: a concurrent test, or the JUnit names differ from the recipe's settings "
            f"(see {_RECIPES})"
        )


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def _covers(classname: str, suite: str) -> bool:
    """Whether the classname already says the suite's name, as whole dotted parts.

    Maven's suite ``com.x.FooTest`` for classname ``com.x.FooTest``, PHPUnit's
    ``Tests\\Foo`` for ``Tests.Foo``, evalrun's own ``rls`` for ``t2.rls``.
    """
    return f".{_dotted(suite)}." in f".{_dotted(classname)}."


def _dotted(text: str) -> str:
    return text.replace("::", ".").replace("\\", ".").replace("/", ".")


def _to_check(check_name: str, cases: list[_Case], file_label: str, secrets: tuple[str, ...]) -> CheckResult | Skip:
    """One check from the testcases that share a name, or the skipped entry if every one was skipped."""
    counts = [_assertions(case, check_name, file_label) for case in cases]
    failures: list[tuple[str, str]] = []  # (message, evidence)
    notes: list[str] = []
    skips: list[str] = []
    ran = 0
    for case in cases:
        skip = next((o for o in case.outcomes if o.tag == "skipped"), None)
        failed = [o for o in case.outcomes if o.tag in ("failure", "error")]
        if case.todo and not failed:
            skips.append("todo")
            continue
        if skip is not None and skip.type in _EXPECTED_FAILURE:
            reason = scrub(_reason(skip.message) or skip.body, secrets)
            label = _EXPECTED_FAILURE[skip.type]
            # pytest writes <skipped type="pytest.xfail"> only for a test that failed as expected;
            # node writes <skipped type="todo"> for both, with a <failure> when it failed. A node todo
            # that did not fail may have no body at all (it.todo): not a check, never a pass.
            if skip.type == "todo" and not failed:
                skips.append(f"{label} {' '.join(reason.split())}".strip() + "; did not fail")
                continue
            notes.append(expected_failure_note(label, reason, failed=True))
            ran += 1
            continue
        if skip is not None:
            skips.append(scrub(_reason(skip.message) or _first_line(skip.body), secrets))
            continue
        ran += 1
        for outcome in failed:
            failures.append(_failure(outcome, secrets))
    if not ran:
        reason = next((r for r in skips if r), "")
        return Skip(check_name, one_line(reason, 200))
    assertions = max(counts)
    if failures:
        message = "; ".join(m for m, _ in failures)
        evidence = "\n".join(e for _, e in failures if e)
        return CheckResult(
            name=check_name,
            assertions=assertions,
            passed=False,
            message=one_line(message),
            evidence=truncate(evidence) if evidence else None,
        )
    note = "; ".join(dict.fromkeys(notes)) or None
    return CheckResult(name=check_name, assertions=assertions, passed=True, message=one_line(note) if note else None)


def _failure(outcome: _Outcome, secrets: tuple[str, ...]) -> tuple[str, str]:
    text = scrub(outcome.body, secrets)
    # Without a message attribute (jest-junit writes none) the text's error line says it, not "● Test suite failed to run".
    message = scrub(outcome.message, secrets) or js_error_line(text.splitlines()[:200]) or _first_line(text)
    message = message or outcome.type or outcome.tag
    prefix = "error: " if outcome.tag == "error" else ""
    return prefix + one_line(message), text


def _assertions(case: _Case, check_name: str, file_label: str) -> int:
    raw = case.assertions
    if raw is None or not raw.strip():
        return 1 if case.counted is None else case.counted
    text = raw.strip()
    whole = _WHOLE.fullmatch(text)
    if whole and int(whole[1]) <= ASSERTIONS_LIMIT:
        return int(whole[1])
    raise ReportError(
        f"junit report {file_label}: line {case.line}: testcase {shorten(check_name, 200)!r}: "
        f"assertions={shorten(raw, 40)!r} is not a whole number from 0 to {ASSERTIONS_LIMIT:,}; "
        f"fix the scorer that writes it"
    )


def _reason(message: str) -> str:
    return "" if message.strip() in _NO_REASON else message


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""
