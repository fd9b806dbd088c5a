"""Check names that are positions, not identities: removing one case renames every later one.

pytest names a case parametrized over objects after its argument and index
(``test_case[case0]``, ``test_case[case1]``, ...), promptfoo's JUnit numbers its
tests (``test 3: says hello``), and a JUnit testcase without a name, or a TAP
point without a description, is ``testcase 4`` / ``test 4``. Such a name says
where a case sits, so removing the first case renames all the others: the
baseline shows one vanished check per later case, and swapping two cases is
no change at all. ``find_positional`` finds such names among an eval's checks;
the warning and the fix for each tool are worded in ``reports_out.positional``.
"""

from __future__ import annotations

from typing import NamedTuple
import re
from collections.abc import Iterable

_PARAMS = re.compile(r"^(?P<stem>[^\[]*)\[(?P<ids>[^\]]*)\]$")
_AUTO_ID = re.compile(r"^(?P<arg>[A-Za-z_]\w*?)(?P<index>\d+)$")  # pytest's id for an object: argname + index
_NUMBERED = re.compile(r"(?:^|> |\.)(?P<word>test|testcase) (?P<index>\d+)(?P<rest>: .*)?$")


class Positional(NamedTuple):
    tool: str  # "pytest" (parametrize ids), "promptfoo" ("test N: description"), "numbered" (test N, testcase N)
    example: str  # the first such name
    count: int  # how many of the names are positional


def find_positional(names: Iterable[str]) -> Positional | None:
    """The positional names among ``names`` (one eval's checks), or None."""
    found: dict[str, list[str]] = {"pytest": [], "promptfoo": [], "numbered": []}
    params: dict[tuple[str, int, str], dict[int, str]] = {}  # (stem, id part, argname) -> index -> name
    for name in names:
        if (match := _PARAMS.match(name)) is not None:
            for at, part in enumerate(match["ids"].split("-")):
                if (auto := _AUTO_ID.match(part)) is not None:
                    params.setdefault((match["stem"], at, auto["arg"]), {})[int(auto["index"])] = name
        elif (numbered := _NUMBERED.search(name)) is not None:
            found["promptfoo" if numbered["word"] == "test" and numbered["rest"] else "numbered"].append(name)
    for indexes in params.values():
        if 0 in indexes and 1 in indexes:  # case0, case1, ...: an index, not a coincidence like "gpt4"
            found["pytest"].extend(indexes[i] for i in sorted(indexes))
    for tool, which in found.items():
        if which:
            unique = list(dict.fromkeys(which))
            return Positional(tool, unique[0], len(unique))
    return None
