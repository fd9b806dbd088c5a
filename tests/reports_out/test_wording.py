"""Wording lives with the outputs: domain modules hand over records, ``reports_out`` makes the words; one plural().

The exact words of the terminal's pass rates, flaky checks, models and cost
lines are pinned here on plain records; the CLI tests pin the same words end
to end. The source checks fail if a wording function moves back into a domain
module or an inline ``'s' if n != 1`` comes back.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalrun
from evalrun import repeats
from evalrun.run import collect, deliver, pipeline
from evalrun.models import cost
from evalrun.run import model_calls as policy
from evalrun.models.cost import run_cost, unpriced_note
from evalrun.repeats import FlakyCheck, flaky_checks
from evalrun.reports_out import summary
from evalrun.reports_out.describe import describe_cost, describe_models, describe_repeats, flaky_line, format_usd, rate_line
from evalrun.reports_out.summary import repeat_lines, report
from evalrun.reports_out.terminal import Console
from evalrun.results import CheckRate, CheckResult, EvalResult, RepeatSummary, RunResults, Status
from evalrun.text import plural

PACKAGE = Path(evalrun.__file__).resolve().parent


# --------------------------------------------------------------------------- plural()


@pytest.mark.parametrize(
    ("count", "noun", "many", "expected"),
    [
        (0, "call", None, "0 calls"),
        (1, "call", None, "1 call"),
        (2, "call", None, "2 calls"),
        (-1, "call", None, "-1 calls"),
        (1, "failed check", None, "1 failed check"),
        (12, "failed check", None, "12 failed checks"),
        (1, "match", "matches", "1 match"),
        (2, "match", "matches", "2 matches"),
        (0, "person", "people", "0 people"),
    ],
)
def test_plural_says_the_count_then_the_noun_plural_unless_exactly_one(
    count: int, noun: str, many: str | None, expected: str
) -> None:
    assert plural(count, noun, many) == expected


@given(st.integers(), st.text(alphabet="abcdefghij ", min_size=1, max_size=12))
def test_plural_is_singular_for_one_alone(count: int, noun: str) -> None:
    assert plural(count, noun) == (f"1 {noun}" if count == 1 else f"{count} {noun}s")


# Inline plurals left where plural() does not fit, each with its reason; told by their words, so that a
# module that moves or splits keeps its exception.
_INLINE_PLURALS_KEPT = {
    "({count} assertion{'' if count == 1 else 's'})": "the scorer SDK is stdlib only: it imports no evalrun.text",
    "ok: {total} check{'' if total == 1 else 's'} passed": "the scorer SDK is stdlib only: it imports no evalrun.text",
    "{assertions:>3} assertion{'s' if assertions != '1' else ''}": "a padded column whose count is '-' when unknown",
    "the Inspect log{'s' if len(logs) > 1 else ''} in": "no count in the words",
    "kept the {finished} check{'s' if finished != 1 else ''} it finished": "left to the helper that splits execute.py",
    "more problem{'s' if len(errors) > 2 else ''}": "left to the helper that makes manifest a package",
}
_INLINE_PLURAL = re.compile(r"""(['"])s\1 if |else (['"])s\2""")


def test_no_inline_plural_is_spelled_out_but_where_plural_does_not_fit() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".html"):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _INLINE_PLURAL.search(line) and not any(kept in line for kept in _INLINE_PLURALS_KEPT):
                found.append(f"{path.relative_to(PACKAGE).as_posix()}:{number}: {line.strip()}")
    assert found == [], "use evalrun.text.plural() instead of an inline 's' if n != 1:\n" + "\n".join(found)


# --------------------------------------------------------------------------- the domain modules return data


@pytest.mark.parametrize(
    ("module", "names"),
    [
        (repeats, ["summary_lines", "flaky_line", "describe_repeats", "rate_line"]),
        (policy, ["describe_models"]),
        (cost, ["describe_cost", "format_usd"]),
    ],
)
def test_the_wording_functions_live_in_reports_out_not_in_the_domain_module(module: object, names: list[str]) -> None:
    assert [n for n in names if hasattr(module, n)] == []


@pytest.mark.parametrize("module", [pipeline, collect, deliver], ids=lambda m: m.__name__)
def test_the_run_report_is_the_one_in_reports_out(module: object) -> None:
    assert getattr(module, "report", summary.report) is summary.report
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    assert "report" not in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


_COLOURS = {"red", "yellow", "green", "cyan", "magenta", "bold red"}


@pytest.mark.parametrize("module", [repeats, cost, policy], ids=lambda m: m.__name__)
def test_no_colour_name_in_a_domain_module(module: object) -> None:
    tree = ast.parse(inspect.getsource(module))  # type: ignore[arg-type]
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert strings & _COLOURS == set()


# --------------------------------------------------------------------------- repeats: records, then words


def _rate(runs: int, passes: int, *, flaky: bool, seen: int | None = None) -> CheckRate:
    return CheckRate(
        runs=runs, passes=passes, seen=runs if seen is None else seen, pass_at_k={"1": 0.9, "3": 1.0},
        pass_hat_k={"1": 0.9, "3": 0.7}, wilson_95=(0.6, 0.98), flaky=flaky,
        failed_runs=[k for k in range(runs - passes)],
    )


def _repeated(name: str, checks: list[CheckResult], **summary_fields: object) -> EvalResult:
    fields: dict[str, object] = {"planned": 10, "runs": 10, "floor": 0.8, "alpha": 0.05, **summary_fields}
    return EvalResult(name=name, tier="t1", dir=f"evals/{name}", status=Status.PASSED, checks=checks,
                      repeats=RepeatSummary(**fields))  # type: ignore[arg-type]


def _run() -> list[EvalResult]:
    steady = CheckResult(name="steady", assertions=2, passed=True, rate=_rate(10, 10, flaky=False))
    wobbly = CheckResult(name="wobbly", assertions=1, passed=True, rate=_rate(10, 9, flaky=True))
    below = CheckResult(name="below", assertions=1, passed=False, rate=_rate(10, 5, flaky=False, seen=8))
    once = EvalResult(name="once", tier="t1", dir="evals/once", status=Status.PASSED,
                      checks=[CheckResult(name="plain", assertions=1, passed=True)])
    return [_repeated("agent", [steady, wobbly]), once, _repeated("rag", [below], stopped_early=True, partial=True)]


def test_flaky_checks_are_records_of_the_eval_the_check_and_the_floor_in_run_order() -> None:
    results = _run()
    found = flaky_checks(results)
    assert found == [FlakyCheck(eval="agent", check=results[0].checks[1], floor=0.8)]
    assert (found[0].rate.passes, found[0].rate.runs) == (9, 10)


def test_a_flaky_rate_without_a_repeat_summary_is_not_listed() -> None:
    loose = EvalResult(name="loaded", tier="t1", dir="d", status=Status.PASSED,
                       checks=[CheckResult(name="c", assertions=1, passed=True, rate=_rate(4, 3, flaky=True))])
    assert flaky_checks([loose]) == []


def test_the_repeat_words_the_terminal_and_markdown_share() -> None:
    agent, _, rag = _run()
    assert describe_repeats(agent) == "10 of 10 runs, floor 0.8"
    assert describe_repeats(rag) == (
        '10 of 10 runs, floor 0.8, stopped early (stop = "decided"): rates from 0 runs, partial: not every run finished'
    )
    assert rate_line(agent.checks[1]) == '"wobbly": 9/10 passed (90%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70'
    assert rate_line(rag.checks[0]) == (
        '"below": 5/10 passed (50%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70, seen in 8 of 10 runs'
    )
    assert flaky_line(flaky_checks([agent])[0]) == 'agent: check "wobbly" passed 9 of 10 (floor 0.8)'


def test_the_terminal_lines_of_repeats_with_their_colours() -> None:
    assert repeat_lines(_run()) == [
        ("pass rates:", None),
        ("  agent: 10 of 10 runs, floor 0.8", None),
        ('    "steady": 10/10 passed (100%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70', None),
        ('    "wobbly": 9/10 passed (90%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70', None),
        ('  rag: 10 of 10 runs, floor 0.8, stopped early (stop = "decided"): rates from 0 runs, '
         "partial: not every run finished", None),
        ('    "below": 5/10 passed (50%, 95% CI 60%-98%), pass@3 1.00, pass^3 0.70, seen in 8 of 10 runs', "red"),
        ("flaky (1):", "yellow"),
        ('  FLAKY agent: check "wobbly" passed 9 of 10 (floor 0.8)', "yellow"),
    ]


def test_no_repeated_eval_no_repeat_lines() -> None:
    assert repeat_lines([_run()[1]]) == []


# --------------------------------------------------------------------------- models and cost: records, then words


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"usd": 0.0123}, "$0.0123"),
        ({"usd": 0}, "$0.0000"),
        ({"usd": 2.5, "unpriced_calls": 0}, "$2.50"),
        ({"usd": 0.5, "unpriced_calls": 1}, "$0.5000 + 1 unpriced call (unknown model: no price in [models.prices])"),
        ({"usd": 1, "unpriced_calls": 3, "unpriced_models": ["m-1", "m-2"]},
         "$1.00 + 3 unpriced calls (m-1, m-2: no price in [models.prices])"),
    ],
)
def test_the_cost_line_from_the_cost_record(record: dict[str, object], expected: str) -> None:
    assert describe_cost(record) == expected


def test_the_unpriced_note_a_result_message_carries_says_what_the_cost_line_says() -> None:
    record = run_cost([{"cost": {"usd": 0.25, "unpriced_calls": 2, "unpriced_models": ["x"]}}, None])
    assert record is not None
    assert unpriced_note(record) == "2 unpriced calls (x: no price in [models.prices])"
    assert describe_cost(record) == f"{format_usd(0.25)} + {unpriced_note(record)}"
    assert unpriced_note({"usd": 1.0, "unpriced_calls": 0}) == ""


def _with_models(models: dict[str, object] | None) -> EvalResult:
    return EvalResult(name="agent", tier="t2", dir="evals/agent", status=Status.PASSED, models=models)


@pytest.mark.parametrize(
    ("models", "expected"),
    [
        (None, None),
        ({"calls": 0, "mode": "replay"}, None),
        ({"mode": "replay", "provider": "openai", "models": ["gpt-4o-mini"], "calls": 1, "tokens": {"total": 12}},
         "agent: openai gpt-4o-mini, 1 call, 12 tokens (replay)"),
        ({"mode": "live", "calls": 2}, "agent: unknown provider no model named, 2 calls, 0 tokens (live)"),
        ({"mode": "record", "by_provider": {"openai": ["a", "b"], "anthropic": ["c"]}, "calls": 6,
          "tokens": {"total": 1234}},
         "agent: openai a, openai b, anthropic c, 6 calls, 1234 tokens (record)"),
        ({"mode": "replay", "provider": "openai", "models": ["m"], "calls": 3, "tokens": {"total": 5},
          "judge": {"models": ["j"], "calls": 1}, "cost": {"usd": 0.0012}},
         "agent: openai m, 3 calls, 5 tokens (replay); judge: j, 1 call; cost $0.0012"),
        ({"mode": "replay", "provider": "openai", "models": ["m"], "calls": 1, "judge": {"calls": 2}},
         "agent: openai m, 1 call, 0 tokens (replay); judge: no model named, 2 calls"),
    ],
)
def test_the_models_line_of_an_eval(models: dict[str, object] | None, expected: str | None) -> None:
    assert describe_models(_with_models(models)) == expected


# --------------------------------------------------------------------------- the report, through a plain console


def test_the_report_prints_the_rates_the_models_and_the_cost_in_that_order() -> None:
    evals = [*_run(), _with_models({"mode": "replay", "provider": "openai", "models": ["m"], "calls": 2,
                                    "tokens": {"total": 9}})]
    results = RunResults(evalrun_version="0", tier="t1", manifest="manifest.toml", started_at="s", finished_at="f",
                         evals=evals, exit_code=0, cost={"usd": 0.5, "unpriced_calls": 1, "unpriced_models": ["m"]})
    out = io.StringIO()
    report(results, Console(out, env={}))
    lines = out.getvalue().splitlines()
    at = {text: lines.index(text) for text in (
        "pass rates:", "flaky (1):", "models that answered:", "  agent: openai m, 2 calls, 9 tokens (replay)",
        "cost: $0.5000 + 1 unpriced call (m: no price in [models.prices])", "evalrun t1: passed (exit 0)",
    )}
    assert list(at.values()) == sorted(at.values())
    assert '  FLAKY agent: check "wobbly" passed 9 of 10 (floor 0.8)' in lines


def _console_lines_worded_outside(folder: Path) -> list[str]:
    """Calls of a console's line/note/warn/error/command whose text is written at the call (a literal, an f-string,
    a concatenation) in the modules under ``folder``: presentation that is not worded in reports_out/."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("line", "note", "warn", "error", "command")):
                continue
            owner = node.func.value
            name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
            if "console" in name and any(isinstance(a, (ast.Constant, ast.JoinedStr, ast.BinOp)) for a in node.args):
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


@pytest.mark.parametrize("folder", ["run", "bites", "commands"])
def test_what_the_run_prints_is_worded_in_reports_out(folder: str) -> None:
    assert _console_lines_worded_outside(Path(evalrun.__file__).parent / folder) == []
