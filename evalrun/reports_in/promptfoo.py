"""Reading promptfoo's JSON output (``promptfoo eval -o out.json``) into checks (``format = "promptfoo"``).

This module owns what that output means to evalrun:

- one check per test and provider, named ``TEST > PROVIDER``: the test is its
  ``description``, else its vars (``word=hello, n=3``), never its index, and
  the provider its label, else its id. When the run has more than one prompt,
  the prompt's label follows: ``TEST > PROVIDER > PROMPT``;
- its assertions are the test's graded components (``componentResults``: one
  per ``assert`` entry), so removing an assertion is "asserts less" (exit 3);
  promptfoo's JUnit output keeps neither these names nor these counts;
- it passes when promptfoo says ``success``; a failed one's message names each
  failed assertion and promptfoo's reason (``contains: Expected output to
  contain "xyz"``);
- a test that errored (promptfoo's ``failureReason`` 2: the provider threw,
  a transform failed) fails with the error's first line; the rest, a stack,
  is the evidence;
- results that share a name (``--repeat``, two tests of one description) are
  one check: their assertions add up, and it passes only if every one passed,
  so removing one still reads as "asserts less";
- promptfoo's totals (successes, failures, errors, tokens) become metrics.

The file is read bounded (``evalrun.files``) and every field is taken only if
it has the type evalrun needs: any file gives checks or one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalrun.errors import ReportError
from evalrun.files import FileReadError, read_bounded
from evalrun.reports_in.parsed import ASSERTIONS_LIMIT, CHECK_LIMIT, NAME_LIMIT, ParsedReport
from evalrun.reports_in.tool_json import (
    TOOL_LOG_LIMIT,
    TOOL_LOG_WHAT,
    load_json,
    metric_value,
    obj,
    scalar_text,
    text_of,
)
from evalrun.results import CheckResult
from evalrun.secrets import scrub
from evalrun.text import one_line, shorten, truncate

_FIX = "make the scorer run promptfoo eval -o with this file"
_ERROR = 2  # promptfoo's ResultFailureReason.ERROR (ASSERT is 1, NONE 0)


@dataclass
class _Check:
    name: str
    assertions: int = 0
    failures: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)


def parse_promptfoo(path: Path, label: str | None = None, secrets: Iterable[str] = ()) -> ParsedReport:
    """The checks of the promptfoo output at ``path``; ``label`` names it in messages (default: its name)."""
    where = f"promptfoo output {label or path.name}"
    secrets = tuple(s for s in secrets if s)
    try:
        raw = read_bounded(path, TOOL_LOG_LIMIT, TOOL_LOG_WHAT)
    except FileReadError as exc:
        if exc.missing:
            fix = "promptfoo did not write it - check -o and the eval's promptfoo path"
            raise ReportError(f"{where}: no such file; {fix}") from None
        raise ReportError(f"{where}: {exc.reason}; {_FIX}") from None
    data = load_json(raw, where, _FIX)
    summary = obj(obj(data).get("results"))
    results = summary.get("results")
    if not isinstance(results, list):
        raise ReportError(f'{where}: no "results.results" list: not promptfoo eval JSON output; {_FIX}')
    rows = [obj(r) for r in results]
    prompts = {_prompt_label(r) for r in rows}
    checks: dict[str, _Check] = {}
    for row in rows:
        name = _name(row, len(prompts) > 1, secrets)
        check = checks.get(name)
        if check is None:
            if len(checks) >= CHECK_LIMIT:
                raise ReportError(f"{where}: more than {CHECK_LIMIT:,} results, the most evalrun reads from one report")
            check = checks[name] = _Check(name)
        _add(check, row, secrets)
    return ParsedReport(
        checks=[_finish(c) for c in checks.values()], metrics=_metrics(summary), source="promptfoo"
    )


def _prompt_label(row: dict[str, Any]) -> str:
    prompt = obj(row.get("prompt"))
    return text_of(prompt.get("label")) or text_of(prompt.get("raw")) or text_of(row.get("promptId"))


def _test_label(row: dict[str, Any]) -> str:
    case = obj(row.get("testCase"))
    description = one_line(text_of(case.get("description")), 400)
    if description:
        return description
    variables = case.get("vars") if isinstance(case.get("vars"), dict) else row.get("vars")
    if isinstance(variables, dict) and variables:
        return ", ".join(f"{one_line(str(k), 80)}={scalar_text(v, 120)}" for k, v in variables.items())
    index = row.get("testIdx")
    return f"test {index + 1}" if isinstance(index, int) and not isinstance(index, bool) else "test"


def _name(row: dict[str, Any], with_prompt: bool, secrets: tuple[str, ...]) -> str:
    provider = obj(row.get("provider"))
    who = text_of(provider.get("label")) or text_of(provider.get("id")) or text_of(row.get("provider")) or "provider"
    parts = [_test_label(row), one_line(who, 200)]
    if with_prompt:
        parts.append(one_line(_prompt_label(row), 200) or "prompt")
    return shorten(scrub(" > ".join(parts), secrets), NAME_LIMIT)


def _add(check: _Check, row: dict[str, Any], secrets: tuple[str, ...]) -> None:
    grading = obj(row.get("gradingResult"))
    components = grading.get("componentResults")
    asserts = obj(row.get("testCase")).get("assert")
    if isinstance(components, list):
        check.assertions += len(components)
    else:  # no assertion ("No assertions": 0, asserted nothing) or errored before grading: what it would assert
        check.assertions += len(asserts) if isinstance(asserts, list) else 0
    error = text_of(row.get("error"))
    if row.get("failureReason") == _ERROR or (error and not grading):
        lines = [line.strip() for line in error.splitlines() if line.strip()]
        check.failures.append(scrub("error: " + (one_line(lines[0], 400) if lines else "the test errored"), secrets))
        if len(lines) > 1:
            check.evidence.append(scrub(truncate(error, 2000), secrets))
        return
    if row.get("success") is True:
        return
    failed = [obj(c) for c in components if not obj(c).get("pass")] if isinstance(components, list) else []
    if failed:
        for component in failed:
            kind = text_of(obj(component.get("assertion")).get("type")) or "assertion"
            reason = one_line(text_of(component.get("reason")), 300) or "failed"
            check.failures.append(scrub(f"{kind}: {reason}", secrets))
    else:
        reason = one_line(text_of(grading.get("reason")) or error, 300) or "promptfoo marked it failed"
        check.failures.append(scrub(reason, secrets))
    output = obj(row.get("response")).get("output")
    if output is not None:
        check.evidence.append(scrub(f"output: {truncate(scalar_text(output, 1000), 1000)}", secrets))


def _finish(check: _Check) -> CheckResult:
    assertions = min(check.assertions, ASSERTIONS_LIMIT)
    if not check.failures:
        return CheckResult(name=check.name, assertions=assertions, passed=True)
    evidence = "\n".join(e for e in check.evidence if e)
    return CheckResult(
        name=check.name,
        assertions=assertions,
        passed=False,
        message=one_line("; ".join(dict.fromkeys(check.failures))),
        evidence=truncate(evidence) if evidence else None,
    )


def _metrics(summary: dict[str, Any]) -> dict[str, Any]:
    stats = obj(summary.get("stats"))
    found = {
        "successes": stats.get("successes"),
        "failures": stats.get("failures"),
        "errors": stats.get("errors"),
        "tokens": obj(stats.get("tokenUsage")).get("total"),
    }
    return {name: number for name, raw in found.items() if (number := metric_value(raw)) is not None}
