"""The JUnit XML reporter: results as the test report GitHub, GitLab and Jenkins read.

Shape (the common subset of Jenkins' junit-10 schema, GitLab's parser and
GitHub test-report actions):

- a ``<testsuites>`` root with totals;
- a ``<testsuite>`` per eval, named after it, with tests/failures/errors/
  skipped/time, its tier, status, metrics and the run's ``network`` (``isolated
  (namespace), except unix sockets bound to a path`` / ``not isolated: <why>``)
  as ``<properties>`` (first, as the schema orders them) and, when it did not pass, the scorer's output tail
  as ``<system-out>``;
- a ``<testcase>`` per check (``classname`` = ``<tier>.<eval>``, ``assertions``)
  with a ``<failure>`` when it failed, its note (an expected failure's "xfail
  bug 12: fails as expected") as ``<system-out>`` when it passed with one, and
  a ``<testcase>`` with ``<skipped>`` and its reason per test the scorer's
  report skipped (TAP ``# SKIP``, JUnit ``<skipped>``, a todo); a flaky check of a repeated eval passes
  with a ``<flakyFailure>`` per failing run (Surefire's convention) and its
  rate in the suite's ``rate.<check>`` / ``flaky.<check>`` properties;
- an eval-level testcase named ``(eval)`` when the eval as a whole has
  something to say: ``<skipped>`` with the reason for a skipped, budget or
  interrupted eval, ``<error>`` for an error or timeout, ``<failure>`` when a
  runner rule failed it while no check did (non-zero exit, no checks);
- a ``<failure>`` testcase per baseline regression, named for the check
  (``baseline: check "x" vanished``); a vanished eval's regression goes into a
  ``<testsuite name="evalrun baseline">``.

Every text goes through ``evalrun.text.neutralise`` (controls, colour codes
and what XML 1.0 cannot carry, such as NULs, spelled out: ``\x1b[31m``,
``\x00``), so a scorer's output can never make the file unreadable or carry an
escape sequence.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from evalrun.atomic import write_atomic
from evalrun.text import neutralise, truncate
from evalrun.reports_out.describe import describe_failure, describe_unchecked, network_line, regression_case_name
from evalrun.results import BaselineChange, EvalResult, NetworkIsolation, RunResults, Status

EVAL_CASE = "(eval)"
BASELINE_SUITE = "evalrun baseline"
_OUTPUT_LIMIT = 8192


def write_junit(results: RunResults, path: Path) -> None:
    """Write the JUnit XML report atomically."""
    write_atomic(path, render_junit(results))


def render_junit(results: RunResults) -> bytes:
    """The JUnit XML document for ``results``, UTF-8 with an XML declaration."""
    root = ET.Element("testsuites", {"name": _clean(f"evalrun {results.tier}")})
    regressions = _regressions_by_eval(results)
    known = {result.name for result in results.evals}
    for result in results.evals:
        root.append(_suite_for_eval(result, regressions.get(result.name, []), results.network))
    orphans = [change for name, changes in regressions.items() if name not in known for change in changes]
    if orphans:
        root.append(_suite_for_orphans(orphans))
    # No "skipped" total on the root: Jenkins' junit-10 schema allows it only on <testsuite>.
    totals = {key: 0 for key in ("tests", "failures", "errors")}
    for suite in root:
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
    root.attrib.update({key: str(value) for key, value in totals.items()})
    root.set("time", _seconds(sum(r.duration_s for r in results.evals)))
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def _regressions_by_eval(results: RunResults) -> dict[str, list[BaselineChange]]:
    grouped: dict[str, list[BaselineChange]] = {}
    if results.baseline is not None:
        for change in results.baseline.regressions:
            grouped.setdefault(change.eval, []).append(change)
    return grouped


def _suite_for_eval(
    result: EvalResult, regressions: list[BaselineChange], network: NetworkIsolation | None = None
) -> ET.Element:
    suite = ET.Element("testsuite", {"name": _clean(result.name), "time": _seconds(result.duration_s)})
    properties = ET.SubElement(suite, "properties")
    pairs = _properties(result)
    if network is not None:  # the run's: a test report read on its own says whether the eval could reach out
        pairs.insert(1, ("network", network_line(network).removeprefix("network: ")))
    for name, value in pairs:
        ET.SubElement(properties, "property", {"name": _clean(name), "value": _clean(value)})
    classname = f"{result.tier}.{result.name}"
    if result.status.is_unchecked:
        case = _case(suite, EVAL_CASE, classname, time=result.duration_s)
        ET.SubElement(case, "skipped", {"message": _clean(describe_unchecked(result))})
    else:
        for check in result.checks:
            case = _case(suite, check.name, classname, assertions=check.assertions)
            if not check.passed:
                _outcome(case, "failure", check.message or "check failed", check.evidence, kind="check")
            elif check.rate is not None and check.rate.flaky:  # passes, but says so (its rate is a suite property)
                # Surefire's <flakyFailure>, one per failing run, is how Jenkins and others show a flaky test.
                for line in (check.evidence or "").splitlines():
                    ET.SubElement(case, "flakyFailure", {"message": _clean(line), "type": "flaky"})
                text = f"flaky: {check.message or ''}\n{check.evidence or ''}".strip()
                ET.SubElement(case, "system-out").text = _clean(truncate(text, _OUTPUT_LIMIT))
            elif check.message:  # a pass with a note: an expected failure, a todo that passes now
                ET.SubElement(case, "system-out").text = _clean(truncate(check.message, _OUTPUT_LIMIT))
        if result.status in (Status.ERROR, Status.TIMEOUT):
            case = _case(suite, EVAL_CASE, classname, time=result.duration_s)
            _outcome(case, "error", describe_failure(result), result.output_tail, kind=result.status.value)
        elif result.status is Status.FAILED and all(check.passed for check in result.checks):
            case = _case(suite, EVAL_CASE, classname, time=result.duration_s)
            _outcome(case, "failure", describe_failure(result), result.output_tail, kind="eval")
    for test in result.skipped_tests:  # what the scorer's own report skipped: a skipped testcase each, with its reason
        case = _case(suite, test.name, classname)
        ET.SubElement(case, "skipped", {"message": _clean(test.reason or "skipped in the scorer's report")})
    for change in regressions:
        case = _case(suite, regression_case_name(change), classname)
        _outcome(case, "failure", change.message, _counts(change), kind="baseline")
    if result.status is not Status.PASSED and result.output_tail:
        ET.SubElement(suite, "system-out").text = _clean(truncate(result.output_tail, _OUTPUT_LIMIT))
    _count(suite)
    return suite


def _suite_for_orphans(changes: list[BaselineChange]) -> ET.Element:
    suite = ET.Element("testsuite", {"name": BASELINE_SUITE, "time": _seconds(0)})
    for change in changes:
        case = _case(suite, regression_case_name(change), f"baseline.{change.eval}")
        _outcome(case, "failure", change.message, _counts(change), kind="baseline")
    _count(suite)
    return suite


def _properties(result: EvalResult) -> list[tuple[str, str]]:
    pairs = [("tier", result.tier), ("status", result.status.value), ("dir", result.dir)]
    if result.experiment is not None:
        pairs.append(("experiment", result.experiment))
    if result.exit_code is not None:
        pairs.append(("exit_code", str(result.exit_code)))
    for key in sorted(result.metrics):
        pairs.append((f"metric.{key}", _text(result.metrics[key])))
    if result.repeats is not None:  # repeats: runs made, the floor, each check's rate, flaky checks by name
        r = result.repeats
        pairs.append(("repeat.runs", f"{r.runs} of {r.planned}"))
        pairs.append(("repeat.floor", f"{r.floor:g}"))
        if r.stopped_early:
            pairs.append(("repeat.stopped_early", "true"))
        if r.partial:
            pairs.append(("repeat.partial", "true"))
        for check in result.checks:
            if check.rate is not None:
                rate = check.rate
                pairs.append((f"rate.{check.name}", f"{rate.passes}/{rate.runs} ({rate.passes / max(rate.runs, 1):.2f})"))
        for name in r.flaky:
            rate = next(c.rate for c in result.checks if c.name == name)
            assert rate is not None
            pairs.append((f"flaky.{name}", f"passed {rate.passes} of {rate.runs} (floor {r.floor:g})"))
    return pairs


def _case(
    suite: ET.Element, name: str, classname: str, *, assertions: int | None = None, time: float | None = None
) -> ET.Element:
    attrs = {"name": _clean(name), "classname": _clean(classname)}
    if assertions is not None:
        attrs["assertions"] = str(assertions)
    attrs["time"] = _seconds(time or 0.0)
    return ET.SubElement(suite, "testcase", attrs)


def _outcome(case: ET.Element, tag: str, message: str, detail: str | None, *, kind: str) -> None:
    node = ET.SubElement(case, tag, {"message": _clean(message), "type": kind})
    if detail:
        node.text = _clean(truncate(detail, _OUTPUT_LIMIT))


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))


def _counts(change: BaselineChange) -> str:
    if change.p_value is not None and change.baseline_rate and change.current_rate:
        (bp, bn), (cp, cn) = change.baseline_rate, change.current_rate
        return f"baseline: passed {bp} of {bn}\ncurrent: passed {cp} of {cn}\none-sided Fisher exact p = {change.p_value:g}"
    return f"baseline assertions: {change.baseline}\ncurrent assertions: {change.current}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _seconds(value: float) -> str:
    return f"{max(value, 0.0):.3f}"


def _clean(text: str) -> str:
    """Text XML 1.0 can carry, inert: controls spelled out (colour codes too), lines kept."""
    return neutralise(text, lines=True)
