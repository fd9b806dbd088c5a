"""Evals × experiments: the dry run's plan matrix and the run's side-by-side table.

Both are grids of plain strings (a header row, then rows), rendered as aligned
text for the terminal or as a Markdown table; nothing here decides anything.
The side-by-side table has one row per check (or per eval, when the checks
are too many to read), each column an experiment: ``pass``/``FAIL`` (or the
pass rate with repeats), then the eval's status, tokens, duration, cost and
the model that actually answered in that column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from evalrun.plan import split_cell_name
from evalrun.results import CheckResult, EvalResult, Status
from evalrun.text import plural

Grid = list[list[str]]
# Above this many check rows the table shows one row per eval; the checks are in the results file.
MAX_CHECK_ROWS = 60


def columns_of(results: Sequence[EvalResult]) -> list[str]:
    """The experiments of a run, in the order they were planned."""
    return list(dict.fromkeys(r.experiment for r in results if r.experiment))


def side_by_side(results: Sequence[EvalResult]) -> Grid | None:
    """The run's evals (and their checks) × experiments; None when no eval ran under an experiment."""
    columns = columns_of(results)
    if not columns:
        return None
    cells: dict[str, dict[str, EvalResult]] = {}
    for r in results:
        if r.experiment:
            cells.setdefault(split_cell_name(r.name)[0], {})[r.experiment] = r
    check_rows = sum(len({c.name for r in row.values() for c in r.checks}) for row in cells.values())
    grid: Grid = [["eval / check", *columns]]
    for eval_name, row in cells.items():
        grid.append([eval_name, *(_status(row.get(x)) for x in columns)])
        if check_rows <= MAX_CHECK_ROWS:
            names = list(dict.fromkeys(c.name for x in columns if x in row for c in row[x].checks))
            # A column that checked nothing (skipped, budget, interrupted) shows "-", not "absent".
            by_column = {x: {c.name: c for c in r.checks} for x, r in row.items() if r.checks or not r.status.is_unchecked}
            for check in names:
                grid.append([f"  {check}", *(_check(by_column.get(x), check) for x in columns)])
    used_models = any(r.models for r in results if r.experiment)
    if used_models:
        grid.append(["tokens", *(_total(results, x, _tokens) for x in columns)])
    grid.append(["duration", *(_total(results, x, lambda r: r.duration_s, "{:.1f} s") for x in columns)])
    if any(isinstance((r.models or {}).get("cost"), dict) for r in results):
        grid.append(["cost", *(_total(results, x, _usd, "${:.4f}") for x in columns)])
    if used_models:
        grid.append(["model that answered", *(_answered(results, x, judge=False) for x in columns)])
        if any((r.models or {}).get("judge") for r in results if r.experiment):
            grid.append(["judge model", *(_answered(results, x, judge=True) for x in columns)])
    return grid


def dry_matrix(
    planned: Sequence[tuple[str, str | None, str, str | None]], rule_skips: Mapping[str, str]
) -> tuple[Grid, list[str]] | None:
    """The plan's evals × experiments: ``run``, ``skip (n)``, ... or ``-``; the reasons as numbered notes.

    ``planned``: (eval, experiment, word, why) of each planned run; ``why`` is None when it would run.
    """
    entries = [entry for entry in planned if entry[1]] + [
        (*split_cell_name(name), "skip", f"not planned: {reason}") for name, reason in rule_skips.items()
    ]
    if not entries:
        return None
    columns = list(dict.fromkeys(x for _, x, _, _ in entries if x))
    rows: dict[str, dict[str, str]] = {}
    notes: list[str] = []
    for eval_name, experiment, word, why in entries:
        if why is not None:
            notes.append(f"({len(notes) + 1}) {eval_name}[{experiment}]: {why}")
            word = f"{word} ({len(notes)})"
        rows.setdefault(eval_name, {})[str(experiment)] = word
    grid: Grid = [["eval", *columns]]
    grid += [[name, *(row.get(x, "-") for x in columns)] for name, row in rows.items()]
    return grid, notes


def plain_lines(grid: Grid) -> list[str]:
    """The grid as aligned text: a header, a rule, the rows."""
    widths = [max(len(row[i]) for row in grid) for i in range(len(grid[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(grid[0], widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in grid[1:]]
    return lines


def markdown_lines(grid: Grid, escape: Callable[[str], str]) -> list[str]:
    """The grid as a GitHub Markdown table; ``escape`` makes a cell's text inert (the Markdown reporter's)."""
    lines = ["| " + " | ".join(escape(c) for c in grid[0]) + " |", "|" + "---|" * len(grid[0])]
    lines += ["| " + " | ".join(escape(c.strip()) or " " for c in row) + " |" for row in grid[1:]]
    return lines


def _status(result: EvalResult | None) -> str:
    if result is None:
        return "-"
    if result.status is Status.PASSED:
        return f"passed ({plural(len(result.checks), 'check')})"
    return result.status.value.upper() if result.status.is_failure else result.status.value


def _check(by_name: Mapping[str, CheckResult] | None, name: str) -> str:
    if by_name is None:
        return "-"
    check = by_name.get(name)
    if check is None:
        return "absent"
    if check.rate is not None:
        return f"{check.rate.passes}/{check.rate.runs}" + ("" if check.passed else " FAIL")
    return "pass" if check.passed else "FAIL"


def _total(
    results: Sequence[EvalResult], column: str, value: Callable[[EvalResult], float | None], form: str = "{}"
) -> str:
    known = [n for n in (value(r) for r in results if r.experiment == column) if n is not None]
    return form.format(sum(known)) if known else "-"


def _tokens(result: EvalResult) -> int | None:
    tokens = (result.models or {}).get("tokens")
    return tokens.get("total") if isinstance(tokens, dict) else None


def _usd(result: EvalResult) -> float | None:
    cost = (result.models or {}).get("cost")
    return cost.get("usd") if isinstance(cost, dict) else None


def _answered(results: Sequence[EvalResult], column: str, *, judge: bool) -> str:
    """The models that answered in ``column``: the code under test's, or (``judge``) the judge's."""
    answered: dict[str, None] = {}
    for r in results:
        if r.experiment != column or not r.models:
            continue
        if judge:
            record = r.models.get("judge")
            answered.update(dict.fromkeys(record.get("models") or [] if isinstance(record, dict) else []))
        else:
            answered.update(dict.fromkeys(r.models.get("models") or []))
    return ", ".join(answered) or "-"
