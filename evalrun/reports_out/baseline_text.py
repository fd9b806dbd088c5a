"""The baseline comparison in words: the terminal's lines, also quoted by the Markdown summary.

``evalrun.baseline`` returns a ``BaselineComparison`` (plain data); this
module says what it means and what to do: the regressions, the stale note
with the update command, and why each eval that ran was not compared.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from collections.abc import Iterable, Mapping
from typing import Any

from evalrun.baseline.compare import failed_before_scorer
from evalrun.results import BaselineChange, BaselineComparison, EvalResult, Status
from evalrun.plan import split_cell_name
from evalrun.text import one_line, plural

_STALE_KINDS = ("new-eval", "new-check", "stronger", "improved", "new-rate", "new-settings", "tightened", "moved-stricter",
                "judge-changed")


def format_comparison(
    cmp: BaselineComparison,
    evals: Iterable[EvalResult] = (),
    run_failed: bool = False,
    selection: Mapping[str, Any] | None = None,
    said_above: bool = False,
) -> list[str]:
    """Plain terminal lines: regressions, then the stale note, then what was not compared.

    ``evals`` (the run's results) lets each eval that ran but was not compared
    say why, one line each (it crashed, timed out, was skipped, failed before
    its scorer started); ``selection`` (the results file's) names the filters
    that left the others out. A failed run is never suggested as a baseline:
    ``baseline --update`` would refuse it. ``said_above``: each eval's message was already shown on its
    own line (a run's terminal), so a line that is not compared names the reason without repeating it.
    """
    run = f"once every eval passes, run: {cmp.update_command}" if run_failed else f"run: {cmp.update_command}"
    lines = [f"regression: {change.message}" for change in cmp.regressions]
    if accept := _accept_line(cmp, run_failed):
        lines.append(accept)
    if any(change.kind in ("loosened", "moved-looser") for change in cmp.regressions):
        lines.append(f"a looser gate must be committed in the baseline, for review; if it is meant, {run}")
    if cmp.strict and any(change.kind in _STALE_KINDS for change in cmp.regressions):
        lines.append(f"baseline is strict: new checks and higher counts must be committed; {run}")
    if not cmp.exists and any(change.kind == "baseline-elsewhere" for change in cmp.regressions):
        lines.append(f"if the tier's baseline is meant to start afresh there, run: {cmp.update_command}")
    elif not cmp.exists:
        create = f"once every eval passes, create it with: {cmp.update_command}" if run_failed else f"create it with: {cmp.update_command}"
        lines.append(f"no baseline at {cmp.path}; {create}")
    elif cmp.stale:
        lines.append(f"baseline is stale: {_summarize_stale(cmp.stale)}; {run}")
        lines.extend(f"  {change.message}" for change in cmp.stale)
    for change in cmp.undecided:
        lines.append(f"{'unchecked' if change.fails else 'note'}: {change.message}")
    ran = {r.name: r for r in evals}
    filtered = set((selection or {}).get("filtered_out") or [])
    left_out: list[str] = []
    unknown: list[str] = []
    for name in cmp.not_compared:
        if name in ran:
            lines.append(f"not compared: {name} {_why_not_compared(ran[name], said_above)}")
        elif name in filtered:
            left_out.append(name)
        else:
            unknown.append(name)
    if left_out:
        lines.append(f"not compared: {', '.join(left_out)}: left out by {_describe_selection(selection or {})}")
    if unknown:
        lines.append(f"not compared: {', '.join(unknown)}" + (": not in this run" if evals else ""))
    return lines


def _accept_line(cmp: BaselineComparison, run_failed: bool = False) -> str | None:
    """``if that was meant, accept it with: evalrun baseline --update t1 -e NAME``: the command that takes the
    vanished or weakened checks into the baseline, for those evals only (a departed eval: the whole tier)."""
    kinds = ("vanished-check", "weakened", "vanished-eval")
    changes = [c for c in cmp.regressions if c.kind in kinds]
    if not changes:
        return None
    if any(c.kind == "vanished-eval" for c in changes):
        command = cmp.update_command  # an unfiltered update drops an eval no longer in the manifest
    else:
        names = dict.fromkeys(split_cell_name(c.eval)[0] for c in changes)
        command = cmp.update_command + "".join(f" -e {shlex.quote(name)}" for name in names)
    what = "a check removed or made to assert less" if len(changes) == 1 else "checks removed or made to assert less"
    when = "once every eval passes, " if run_failed else ""
    return f"if that was meant ({what} on purpose), {when}accept it with: {command}"


def _why_not_compared(result: EvalResult, said_above: bool = False) -> str:
    """``crashed (exit 3: ...)``: why an eval that was in the run has no checks to diff, in one line."""
    detail = "" if said_above or not result.message else f" ({one_line(result.message, 300)})"
    if failed_before_scorer(result):
        return f"failed before its scorer started{detail}"
    words = {
        Status.ERROR: "errored",
        Status.TIMEOUT: "timed out",
        Status.SKIPPED: "was skipped",
        Status.INTERRUPTED: "was interrupted",
        Status.BUDGET: "was stopped by the model budget",
    }
    return f"{words.get(result.status, result.status.value)}{detail}"


def _describe_selection(selection: Mapping[str, Any]) -> str:
    """``--eval a --experiment m``: the filters of a run, as typed."""
    flags = (("evals", "--eval"), ("tags", "--tag"), ("experiments", "--experiment"),
             ("changed_since", "--changed-since"), ("shard", "--shard"))
    parts = []
    for key, flag in flags:
        value = selection.get(key)
        for item in value if isinstance(value, list) else [value] if value else []:
            parts.append(f"{flag} {item}")
    return "this run's filters" + (f" ({' '.join(parts)})" if parts else "")


def _summarize_stale(stale: Iterable[BaselineChange]) -> str:
    kinds = [change.kind for change in stale]
    words = {"new-check": ("new check", "new checks"), "stronger": ("stronger check", "stronger checks"),
             "new-eval": ("new eval", "new evals"),
             "improved": ("check passing more often", "checks passing more often"),
             "new-rate": ("check with a pass rate to record", "checks with pass rates to record"),
             "new-settings": ("eval whose gate settings are not recorded yet", "evals whose gate settings are not recorded yet"),
             "tightened": ("tightened gate", "tightened gates"),
             "moved-stricter": ("eval moved to a stricter tier", "evals moved to a stricter tier"),
             "judge-changed": ("eval judged by another judge", "evals judged by another judge")}
    parts = []
    for kind in ("new-check", "stronger", "improved", "new-rate", "new-eval", "new-settings", "tightened", "moved-stricter",
                 "judge-changed"):
        count = kinds.count(kind)
        if count:
            singular, many = words[kind]
            parts.append(plural(count, singular, many))
    return ", ".join(parts)


def tier_note(tier: str, note: str) -> str:
    """``t1: <note>``: what an update did beyond writing (a note of ``update_baseline``), per tier."""
    return f"{tier}: {note}"


def baseline_written(path: Path, evals: int, checks: int) -> str:
    """``wrote baselines/t1.toml (2 evals, 5 checks)``: the update's last line per tier."""
    return f"wrote {path} ({plural(evals, 'eval')}, {plural(checks, 'check')})"


def baseline_matches(tier: str, source: Path, path: Path) -> str:
    """``t1: results in .evalrun/results-t1.json match baselines/t1.toml``: a diff with nothing to say."""
    return f"{tier}: results in {source} match {path}"
