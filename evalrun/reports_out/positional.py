"""The warning for check names that are positions (``evalrun.reports_in.positional``), with each tool's fix."""

from __future__ import annotations

from evalrun.reports_in.positional import Positional
from evalrun.text import plural

_FIX = {
    "pytest": "name the cases with parametrize's ids= (or pytest.param(..., id=...))",
    "promptfoo": "give each test a description and read promptfoo's results file (format = \"promptfoo\"), not its JUnit",
    "numbered": "give each test a name of its own",
}


def positional_warning(eval_name: str, found: Positional) -> str:
    many = found.count != 1
    return (
        f'warning: {eval_name}: {plural(found.count, "check name")} {"are positions" if many else "is a position"}'
        f' (e.g. "{found.example}"): removing one case renames every later one; {_FIX[found.tool]}'
    )
