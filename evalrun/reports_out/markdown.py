"""The Markdown reporter: a summary for a pull request or a GitHub job page.

Order is what a reviewer needs first: the verdict and exit code, the counts, a
table of evals, then failures with their messages (evidence folded away),
baseline regressions, what was not checked and why, and a stale-baseline note
with the command that updates it. Every piece of scorer text is neutralised
(``evalrun.text.neutralise``) and escaped, so a message cannot break the table,
inject markup or carry a control character, and the whole stays well under
GitHub's 1 MiB step-summary limit however many checks fail.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from evalrun.atomic import write_atomic
from evalrun.reports_out.baseline_text import format_comparison
from evalrun.reports_out.matrix import markdown_lines, side_by_side
from evalrun.text import neutralise, one_line, plural, truncate, well_formed
from evalrun.repeats import flaky_checks
from evalrun.reports_out.describe import (
    describe_repeats, describe_unchecked, describe_verdict, network_line, rate_line, update_hint,
)
from evalrun.results import BaselineChange, CheckResult, RunResults, Status

_ICONS = {
    Status.PASSED: "✅",
    Status.FAILED: "❌",
    Status.ERROR: "💥",
    Status.TIMEOUT: "⏱️",
    Status.SKIPPED: "⚠️",
    Status.INTERRUPTED: "⏹️",
    Status.BUDGET: "💸",
}
_MAX_EVIDENCE = 20  # evidence blocks shown in all; the rest is in the results file
_EVIDENCE_BYTES = 1024
_MAX_FAILED_CHECKS = 50  # per eval
_MAX_BYTES = 900_000  # GitHub refuses step summaries over 1 MiB
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#!])")
_EXITED = re.compile(r"\((exited -?\d+)\)$")


def render_markdown(results: RunResults) -> str:
    """The Markdown summary of ``results``."""
    parts = [_heading(results), _counts(results), _network(results), _table(results), _side_by_side(results)]
    parts += _failures(results)
    parts += _flaky(results)
    parts += _rates(results)
    parts += _regressions(results)
    parts += _undecided(results)
    parts += _unchecked(results)
    parts += _stale(results)
    text = well_formed("\n\n".join(part for part in parts if part) + "\n")
    if len(text.encode("utf-8")) > _MAX_BYTES:
        text = truncate(text, _MAX_BYTES) + "\n\n_Summary cut to fit; the results file has everything._\n"
    return neutralise(text, lines=True)  # the final string: whatever a piece missed, nothing raw leaves


def write_markdown(results: RunResults, path: Path) -> None:
    """Write the Markdown summary atomically."""
    write_atomic(path, render_markdown(results))


def _heading(results: RunResults) -> str:
    icon = "✅" if results.exit_code == 0 else "❌"
    return f"## {icon} evalrun {_md(results.tier)}: {describe_verdict(results)}"


def _network(results: RunResults) -> str:
    """The run's header line on the network, bold when it was not isolated; none for t3."""
    if results.network is None:
        return ""
    line = _md(one_line(network_line(results.network)))
    return line if results.network.isolated else f"⚠️ **{line}**"


def _counts(results: RunResults) -> str:
    by_status: dict[Status, int] = {}
    for result in results.evals:
        by_status[result.status] = by_status.get(result.status, 0) + 1
    statuses = ", ".join(f"{count} {status.value}" for status, count in by_status.items())
    checks = sum(len(r.checks) for r in results.evals)
    assertions = sum(c.assertions for r in results.evals for c in r.checks)
    seconds = sum(r.duration_s for r in results.evals)
    evals = f"**{plural(len(results.evals), 'eval')}**"
    line = f"{evals}: {statuses or 'none ran'} · {plural(checks, 'check')}, {plural(assertions, 'assertion')} · {seconds:.1f} s"
    if results.interrupted:
        line += "\n\n**Interrupted:** these results are partial."
    return line


def _table(results: RunResults) -> str:
    if not results.evals:
        return ""
    rows = ["| eval | status | checks passed | assertions | time |", "| --- | --- | --- | ---: | ---: |"]
    for result in results.evals:
        passed = sum(1 for c in result.checks if c.passed)
        assertions = sum(c.assertions for c in result.checks)
        status = f"{_ICONS.get(result.status, '')} {result.status.value}"
        checks = f"{passed}/{len(result.checks)}" if result.checks else "-"
        rows.append(f"| {_md(result.name)} | {status} | {checks} | {assertions} | {result.duration_s:.1f} s |")
    return "\n".join(rows)


def _side_by_side(results: RunResults) -> str:
    """Evals and checks × experiments, as the terminal shows them (evalrun.reports_out.matrix)."""
    grid = side_by_side(results.evals)
    if grid is None:
        return ""
    return "**Side by side** (experiments as columns)\n\n" + "\n".join(markdown_lines(grid, _md))


def _failures(results: RunResults) -> list[str]:
    failing = [r for r in results.evals if r.status.is_failure]
    if not failing:
        return []
    parts = ["### Failures"]
    evidence_left = _MAX_EVIDENCE
    for result in failing:
        parts.append(f"#### {_md(result.name)} ({result.status.value}, in {_md(result.dir)})")
        lines: list[str] = []
        failed = [c for c in result.checks if not c.passed]
        summary = _eval_message(result.message, failed)
        if summary:
            lines.append(f"- {_md(one_line(summary))}")
        for check in failed[:_MAX_FAILED_CHECKS]:
            message = f": {_md(one_line(check.message))}" if check.message else ""
            lines.append(f"- check **{_md(check.name)}** failed{message}")
        if len(failed) > _MAX_FAILED_CHECKS:
            lines.append(f"- ... and {len(failed) - _MAX_FAILED_CHECKS} more failed checks")
        parts.append("\n".join(lines) or "- failed")
        for check in failed:
            if check.evidence and evidence_left > 0:
                evidence_left -= 1
                parts.append(_details(f"evidence: {check.name}", check.evidence))
        if result.output_tail and evidence_left > 0 and (result.status is not Status.FAILED or not failed):
            evidence_left -= 1
            parts.append(_details("output tail", result.output_tail))
    return parts


def _eval_message(message: str | None, failed: list[CheckResult]) -> str | None:
    """The eval's message, unless it only sums up the failed checks listed right below it.

    The runner words that summary as ``check "NAME" failed: MESSAGE (and N more
    failed checks)``, perhaps with `` (exited N)``; only the exit is news.
    """
    if not message or not failed or not message.startswith(f'check "{failed[0].name}" failed'):
        return message
    exited = _EXITED.search(message)
    return exited.group(1) if exited else None


def _change_line(change: BaselineChange) -> str:
    """A baseline change under its eval's name; the message's own ``eval: `` prefix is not repeated."""
    return f"- **{_md(change.eval)}**: {_md(change.message.removeprefix(f'{change.eval}: '))}"


def _flaky(results: RunResults) -> list[str]:
    """Repeated evals' checks that met their floor without passing every run: listed, never silent."""
    rows = [
        f"- **{_md(f.eval)}**: check **{_md(f.check.name)}** passed {f.rate.passes} of {f.rate.runs} "
        f"(floor {f.floor:g}; 95% CI {f.rate.wilson_95[0]:.0%}-{f.rate.wilson_95[1]:.0%})"
        for f in flaky_checks(results.evals)
    ]
    if not rows:
        return []
    return [f"### Flaky checks ({len(rows)})", "\n".join(rows),
            "They met their floor (`min_pass_rate`) and pass the gate, but not every run passed."]


def _rates(results: RunResults) -> list[str]:
    """Every repeated eval's checks with runs, passes, the 95% interval, pass@k and pass^k."""
    repeated = [r for r in results.evals if r.repeats is not None and r.checks]
    if not repeated:
        return []
    lines = []
    for r in repeated:
        lines.append(f"- **{_md(r.name)}**: {_md(describe_repeats(r))}")
        lines.extend(f"  - {_md(rate_line(c))}" for c in r.checks if c.rate is not None)
    return ["### Pass rates", "\n".join(lines)]


def _regressions(results: RunResults) -> list[str]:
    baseline = results.baseline
    if baseline is None or not baseline.regressions:
        return []
    lines = [_change_line(change) for change in baseline.regressions]
    title = f"### Baseline regressions (`{_code(baseline.path)}`)"
    note = (
        "A check that vanished, asserts less or passes less often beyond chance is a regression even when everything passed. "
        "Restore it, or if the change is intended, record it with "
        f"`{_code(update_hint(results))}` and commit the baseline."
    )
    return [title, "\n".join(lines), note]


def _undecided(results: RunResults) -> list[str]:
    baseline = results.baseline
    if baseline is None or not baseline.undecided:
        return []
    lines = [_change_line(change) for change in baseline.undecided]
    note = (
        "A lower pass rate that is not lower beyond chance is not a pass either: repeat more "
        "(`repeat = N`) until the comparison can tell."
    )
    return ["### Too little data to tell", "\n".join(lines), note]


def _unchecked(results: RunResults) -> list[str]:
    unchecked = [r for r in results.evals if r.status.is_unchecked]
    not_compared = results.baseline.not_compared if results.baseline is not None else []
    if not unchecked and not not_compared:
        return []
    parts = ["### Not checked"]
    if unchecked:
        parts.append("\n".join(f"- **{_md(r.name)}**: {_md(one_line(describe_unchecked(r)))}" for r in unchecked))
        parts.append("A skip is never a pass: meet the requirement, or run the tier where it is met.")
    if not_compared and results.baseline is not None:
        # The terminal's lines, each with its reason (crashed, skipped, left out by -e/-x ...).
        why = [line.removeprefix("not compared: ") for line in format_comparison(
            results.baseline, results.evals, selection=results.selection) if line.startswith("not compared: ")]
        parts.append("Not compared with the baseline:\n" + "\n".join(f"- {_md(line)}" for line in why))
    return parts


def _stale(results: RunResults) -> list[str]:
    baseline = results.baseline
    if baseline is None or not baseline.stale:
        return []
    lines = [_change_line(change) for change in baseline.stale]
    missing = "" if baseline.exists else " (it does not exist yet)"
    return [
        f"### Stale baseline (`{_code(baseline.path)}`{missing})",
        "\n".join(lines),
        f"Record these with `{_code(update_hint(results))}` and commit `{_code(baseline.path)}`.",
    ]


def _details(summary: str, body: str) -> str:
    text = neutralise(truncate(body, _EVIDENCE_BYTES), lines=True)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    title = html.escape(neutralise(one_line(summary, 200)))
    return f"<details><summary>{title}</summary>\n\n{fence}\n{text}\n{fence}\n\n</details>"


def _md(text: str) -> str:
    """Scorer text made inert in Markdown and table cells: one line, markup escaped."""
    flat = neutralise(" ".join(text.split()))
    return _MD_SPECIAL.sub(r"\\\1", html.escape(flat, quote=False))


def _code(text: str) -> str:
    """Text for inside a single-backtick code span (backticks and pipes can't be escaped there)."""
    return neutralise(" ".join(text.split())).replace("`", "'").replace("|", "/")
