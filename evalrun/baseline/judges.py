"""Who judged, in the baseline: a judge swap is reported, never compared as a change of the product.

``baseline --update`` records, per eval (per cell), the identities of the
judges its checks were graded by (``checks[].judge``: the model asked and a
hash of its prompt and rubric, ``evalrun.scorer.judging.identity``), in one
table whose name no eval can have::

    ["/judges"]
    "agent-tools[mini]" = ["gpt-4o-mini#3f2a9c1b7e4d"]

A later run whose eval was judged by other judges (another model, rubric or
grading prompt) says so, one stale line per eval (a regression under
``strict``), and its judged checks' pass rates are not compared with the
baseline's: a more lenient judge must not read as a fix, nor a stricter one as
a regression. Counts and vanished checks are still compared: they do not
depend on who judged. A baseline written before judges were recorded compares
none (the next update records them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from evalrun.errors import BaselineError
from evalrun.baseline.settings import TOML_BASIC
from evalrun.results import JUDGE_ID, BaselineChange, EvalResult, Status
from evalrun.text import plural

JUDGES_TABLE = "/judges"  # no eval or cell name holds "/"
Judges = dict[str, tuple[str, ...]]


def judges_of(result: EvalResult) -> tuple[str, ...]:
    """The distinct judge identities of an eval's checks, sorted (empty: nothing was judged)."""
    return tuple(sorted({c.judge for c in result.checks if c.judge}))


def diff_judges(
    recorded: Mapping[str, tuple[str, ...]] | None,
    compared: Mapping[str, EvalResult],
    names: Iterable[str],
    stale: list[BaselineChange],
) -> set[str]:
    """A ``judge-changed`` stale note per eval judged by others than recorded; returns those evals' names.

    ``names``: the baselined evals of this run. An eval whose results carry no
    check records (a counts-only re-judge) is not compared.
    """
    if recorded is None:
        return set()
    changed: set[str] = set()
    for name in names:
        result = compared.get(name)
        if result is None or not result.checks:
            continue
        now, before = judges_of(result), tuple(recorded.get(name, ()))
        if now == before or not now and not before:
            continue
        changed.add(name)
        judged = sum(1 for c in result.checks if c.judge)
        was, is_now = ", ".join(before) or "no judge", ", ".join(now) or "no judge"
        stale.append(BaselineChange(
            eval=name, kind="judge-changed",
            message=f"{name}: the judge changed ({was} -> {is_now}); "
                    f"{plural(judged, 'judged check')} not compared by pass rate",
        ))
    return changed


def updated_judges(
    old: Mapping[str, tuple[str, ...]] | None, results: Iterable[EvalResult], keep: Iterable[str]
) -> Judges:
    """What ``baseline --update`` records: the judges of each eval that passed this run, else the old entry."""
    out: Judges = {}
    passed = {r.name: r for r in results if r.status is Status.PASSED}
    for name in sorted(keep):
        if name in passed:
            ids = judges_of(passed[name])
            if ids:
                out[name] = ids
        elif old is not None and name in old:
            out[name] = tuple(old[name])
    return out


# --- the written form ---------------------------------------------------------


def judges_line(key: str, ids: tuple[str, ...]) -> str:
    """One line of the judges table; ``key`` is already a TOML key."""
    return f"{key} = [{', '.join(json.dumps(i) for i in ids)}]"


_ID = f'"({JUDGE_ID})"'
JUDGES_ENTRY = re.compile(r"(?:([A-Za-z0-9_-]+)|" + TOML_BASIC + r") = \[((?:" + _ID + r"(?:, " + _ID + r")*)?)\]\Z")
_ID_IN_LIST = re.compile(_ID)


def read_judges_entry(line: str) -> tuple[str, list[str]] | None:
    """``(eval, the list tomllib would read)`` for a line of the written form, else None."""
    match = JUDGES_ENTRY.match(line)
    if match is None:
        return None
    bare, quoted, ids = match.group(1), match.group(2), match.group(3)
    key = bare if bare is not None else (json.loads(f'"{quoted}"') if "\\" in quoted else quoted)
    return key, [m.group(1) for m in _ID_IN_LIST.finditer(ids)]


def parse_judges_table(label: str, table: Any, fix: str) -> Judges:
    """The ``["/judges"]`` table -> identities per eval; a one-line ``BaselineError`` otherwise."""
    where = f'{label}: ["{JUDGES_TABLE}"]'
    if not isinstance(table, dict):
        raise BaselineError(f'{where}: must be a table of eval = ["MODEL#HASH", ...]; {fix}')
    out: Judges = {}
    for name, ids in table.items():
        if not isinstance(ids, list) or not all(isinstance(i, str) and _ID_FULL.fullmatch(i) for i in ids):
            raise BaselineError(
                f'{where} {json.dumps(name, ensure_ascii=False)}: must be a list of judge identities "MODEL#HASH"; {fix}'
            )
        out[name] = tuple(sorted(set(ids)))
    return out


_ID_FULL = re.compile(JUDGE_ID)
