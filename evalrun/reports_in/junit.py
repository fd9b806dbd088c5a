"""Reading a JUnit XML file that a scorer wrote into checks.

This module owns what a JUnit report means to evalrun:

- each ``<testcase>``, at any depth under ``<testsuites>``/``<testsuite>``, is
  a check named ``classname.name`` (``name`` alone when there is no
  classname): pytest, Maven and Go's converters all put the module or class in
  ``classname``, and the pair is what keeps two ``test_ok`` apart;
- its ``assertions`` attribute is its assertion count when present, else 1;
- ``<failure>`` or ``<error>`` fails it: the message is the ``message``
  attribute (else the text's first line; ``error: `` is prefixed for an
  ``<error>`` so a crash reads differently from a false assertion), and the
  text, cut to about 2 KB, is the evidence;
- ``<skipped>`` makes it not a check, like a TAP ``# SKIP`` (see
  ``evalrun.reports_in.parsed``); properties and output are ignored.

The XML is parsed with the stdlib's expat, feeding ElementTree's builder, and
any DOCTYPE or ENTITY declaration is refused before it can expand: defusedxml
is not a dependency and a test report has no use for either. An unusable file
raises ``ReportError`` with one line naming the file, the line and the fix.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from evalrun.errors import ReportError
from evalrun.reports_in.parsed import NameDeduper, ParsedReport
from evalrun.text import one_line, truncate
from evalrun.results import CheckResult

_LINE_ATTR = "{evalrun}line"  # where a testcase started, for messages; namespaced so it can't clash


class _Refused(Exception):
    def __init__(self, what: str, line: int) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


def parse_junit(path: Path, label: str | None = None) -> ParsedReport:
    """Translate the JUnit XML file at ``path``; ``label`` names it in messages (default: its name)."""
    name = label or path.name
    root = _parse_xml(path, name)
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(
            f"junit report {name}: the root element is <{root.tag}>, not <testsuites> or <testsuite>; "
            f"point junit = at the JUnit XML the scorer writes"
        )
    names = NameDeduper()
    checks: list[CheckResult] = []
    skipped: list[str] = []
    for case in root.iter("testcase"):
        check_name = names.unique(_case_name(case, len(checks) + len(skipped) + 1))
        skip = case.find("skipped")
        if skip is not None:
            reason = skip.get("message") or _first_line(skip.text)
            skipped.append(f"{check_name} ({reason})" if reason else check_name)
            continue
        checks.append(_to_check(case, check_name, name))
    problem = None if checks or skipped else "no <testcase> in the report"
    return ParsedReport(checks=checks, metrics={}, problem=problem, skipped=skipped, source="JUnit")


def _parse_xml(path: Path, name: str) -> ET.Element:
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def refuse_doctype(*_args: object) -> None:
        raise _Refused("DOCTYPE", parser.CurrentLineNumber)

    def refuse_entity(*_args: object) -> None:
        raise _Refused("ENTITY", parser.CurrentLineNumber)

    def start(tag: str, attrs: dict[str, str]) -> None:
        if tag == "testcase":
            attrs = {**attrs, _LINE_ATTR: str(parser.CurrentLineNumber)}
        builder.start(tag, attrs)

    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = lambda *_args: 0  # never fetch anything
    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    try:
        with path.open("rb") as handle:
            parser.ParseFile(handle)
    except FileNotFoundError:
        raise ReportError(
            f"junit report {name}: no such file; the scorer did not write it - check the eval's junit path"
        ) from None
    except IsADirectoryError:
        raise ReportError(f"junit report {name}: is a directory; junit = must name the XML file") from None
    except OSError as exc:
        raise ReportError(f"junit report {name}: cannot read it ({exc.strerror}); check its permissions") from None
    except _Refused as exc:
        raise ReportError(
            f"junit report {name}: line {exc.line}: {exc.what} declarations are refused (entity expansion); "
            f"make the scorer write plain JUnit XML"
        ) from None
    except expat.ExpatError as exc:
        reason = expat.ErrorString(exc.code) if exc.code else str(exc)
        raise ReportError(
            f"junit report {name}: not valid XML: line {exc.lineno}: {reason}; fix the scorer that writes it"
        ) from None
    return builder.close()


def _case_name(case: ET.Element, ordinal: int) -> str:
    name = (case.get("name") or "").strip()
    classname = (case.get("classname") or "").strip()
    if not name:
        name = f"testcase {ordinal}"
    return f"{classname}.{name}" if classname else name


def _to_check(case: ET.Element, check_name: str, file_label: str) -> CheckResult:
    assertions = _assertions(case, check_name, file_label)
    for tag, prefix in (("failure", ""), ("error", "error: ")):
        node = case.find(tag)
        if node is None:
            continue
        text = (node.text or "").strip()
        message = node.get("message") or _first_line(text) or node.get("type") or tag
        return CheckResult(
            name=check_name,
            assertions=assertions,
            passed=False,
            message=prefix + one_line(message),
            evidence=truncate(text) if text else None,
        )
    return CheckResult(name=check_name, assertions=assertions, passed=True)


def _assertions(case: ET.Element, check_name: str, file_label: str) -> int:
    raw = case.get("assertions")
    if raw is None or not raw.strip():
        return 1
    try:
        value = int(float(raw)) if raw.strip().replace(".", "", 1).isdigit() else int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ReportError(
            f"junit report {file_label}: line {case.get(_LINE_ATTR)}: testcase {check_name!r}: "
            f"assertions={raw!r} is not a whole number >= 0; fix the scorer that writes it"
        )
    return value


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""
