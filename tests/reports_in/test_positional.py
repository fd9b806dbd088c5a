"""Check names that are positions: found per tool, warned by every run that has them and by evalrun check."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.reports_in.positional import Positional, find_positional
from evalrun.run.deliver import maybe_positional
from harness import an_eval, manifest


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["t.test_case[case0]", "t.test_case[case1]", "t.test_case[case2]", "t.test_other"],
         Positional("pytest", "t.test_case[case0]", 3)),
        (["t.test_x[case0-fast]", "t.test_x[case1-fast]"], Positional("pytest", "t.test_x[case0-fast]", 2)),
        # DeepEval's documented parametrize("test_case", dataset): objects, so test_case0, test_case1, ...
        (["tests/test_llm.py::test_answer[test_case0]", "tests/test_llm.py::test_answer[test_case1]"],
         Positional("pytest", "tests/test_llm.py::test_answer[test_case0]", 2)),
        (["promptfoo > test 0: says hello", "promptfoo > test 1: says bye"],
         Positional("promptfoo", "promptfoo > test 0: says hello", 2)),
        (["s > testcase 4"], Positional("numbered", "s > testcase 4", 1)),
        (["test 4"], Positional("numbered", "test 4", 1)),  # Test::More's ok() without a description
    ],
)
def test_positional_names_by_tool(names: list[str], expected: Positional) -> None:
    assert find_positional(names) == expected
    assert all(maybe_positional(n) for n in names)  # the run's cheap test lets each through to the finder


_PIECES = st.sampled_from(["test", "testcase", "case", "[", "]", "-", " ", "> ", ".", ": ", "0", "1", "12", "x", "T"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_PIECES, max_size=8).map("".join), min_size=1, max_size=4))
def test_a_name_the_runs_cheap_test_passes_over_is_never_positional(names: list[str]) -> None:
    # A run skips the finder (and loading it) when no check name passes ``maybe_positional``: it must miss none.
    assert all(maybe_positional(n) for n in names) or find_positional([n for n in names if not maybe_positional(n)]) is None


@pytest.mark.parametrize(
    "names",
    [
        ["t.test_model[gpt4]", "t.test_model[claude3]"],  # ids that end in digits are not indexes
        ["t.test_case[case1]", "t.test_case[case2]"],  # no case0: not pytest's counting
        ["t.test_adds", "math > adds", "test adds 2 numbers", "latest 3"],
        ["t.test_case[case0]"],  # one case: nothing to shift
    ],
)
def test_names_that_are_identities_are_not_positional(names: list[str]) -> None:
    assert find_positional(names) is None


PY_CASES = """
import pytest

class Case:
    def __init__(self, text, want):
        self.text, self.want = text, want

CASES = [Case("a", 1), Case("bb", 2), Case("ccc", 3)]

@pytest.mark.parametrize("case", CASES)
def test_case(case):
    assert len(case.text) == case.want
"""


def test_run_warns_once_and_check_always_for_pytest_parametrize_over_objects(project) -> None:
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=out.xml", "test_x.py"]
    proj = project(
        {
            "manifest.toml": manifest(an_eval("py", argv, dir="e", format="junit", junit="out.xml",
                                              env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})).text,
            "e/test_x.py": PY_CASES,
        }
    )
    warning = (
        'warning: py: 3 check names are positions (e.g. "test_x.test_case[case0]"): removing one case renames '
        "every later one, and a case replaced at the same position passes unseen; name the cases with "
        "parametrize's ids= (or pytest.param(..., id=...)); for objects such as DeepEval's test cases, a "
        "pytest_make_parametrize_id hook in conftest.py can name each from a field"
    )

    r = proj.run("baseline", "--update", "t1")
    assert r.code == 0, r.output
    assert warning in r.out, r.out

    # In the baseline now, and still said: a case replaced at the same position passes, and only the warning says so.
    (proj.root / "e/test_x.py").write_text(PY_CASES.replace('Case("bb", 2)', 'Case("xy", 2)'))
    r = proj.run("t1")
    assert r.code == 0, r.output
    assert r.out.count(warning) == 1, r.out

    # One case removed: the last position vanishes, and the warning says the case removed may be another.
    (proj.root / "e/test_x.py").write_text(PY_CASES.replace('Case("a", 1), ', ""))
    r = proj.run("t1")
    assert r.code == 3, r.output
    assert '"test_x.test_case[case2]" vanished, but the case removed may be any earlier one' in r.out, r.out

    r = proj.run("check")
    assert r.code == 0, r.output
    assert warning.replace("warning: py:", "warning: t1 py:") in r.out, r.out
