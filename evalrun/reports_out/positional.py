"""The warning for check names that are positions (``evalrun.reports_in.positional``), with each tool's fix."""

from __future__ import annotations

from evalrun.reports_in.positional import Positional
from evalrun.text import plural

_FIX = {
    "pytest": ("name the cases with parametrize's ids= (or pytest.param(..., id=...)); for objects such as "
               "DeepEval's test cases, a pytest_make_parametrize_id hook in conftest.py can name each from a field"),
    "promptfoo": "give each test a description and read promptfoo's results file (format = \"promptfoo\"), not its JUnit",
    "numbered": "give each test a name of its own",
}


def positional_warning(eval_name: str, found: Positional, vanished: list[str] | None = None) -> str:
    """One line: which names are positions, what that hides, the tool's fix.

    ``vanished``: the positional names of the baseline this run lacks; the case removed may be any earlier one.
    """
    many = found.count != 1
    gone = ""
    if vanished:
        gone = (f'; "{vanished[0]}"{f" (and {len(vanished) - 1} more)" if len(vanished) > 1 else ""} vanished, '
                f"but the case removed may be any earlier one")
    return (
        f'warning: {eval_name}: {plural(found.count, "check name")} {"are positions" if many else "is a position"}'
        f' (e.g. "{found.example}"): removing one case renames every later one, and a case replaced at the same'
        f" position passes unseen{gone}; {_FIX[found.tool]}"
    )
