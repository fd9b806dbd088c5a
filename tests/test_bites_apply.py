"""Laying a bite on a clean copy: what it says it changes must change, or the bite is "broken".

Real git, in-process: the copy lies inside an outer repository (a TMPDIR in a CI's work tree), a
replaced target that is a folder in the copy, and the parser of ``git apply --numstat -z``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.bites import BiteNotApplied, _numstat_paths, apply_bite
from evalrun.manifest.schema import Bite
from harness.stub_projects import GUARD_PATCH



def _copy_inside_a_repository(tmp_path: Path) -> Path:
    """An export (no .git of its own) in a folder of an outer git work tree."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    top = tmp_path / "tmp" / "evalrun-checkout-x"
    guard = top / "evals" / "guard"
    (guard / "bites").mkdir(parents=True)
    (guard / "product.txt").write_text("safe\n")
    (guard / "bites" / "leaky.patch").write_text(GUARD_PATCH)
    return top


def test_a_patch_applies_to_the_copy_not_to_the_repository_around_it(tmp_path: Path) -> None:
    top = _copy_inside_a_repository(tmp_path)
    apply_bite(Bite(name="b", patch="bites/leaky.patch", fails=["x"]), top / "evals" / "guard", top)
    assert (top / "evals" / "guard" / "product.txt").read_text() == "leaky\n"


def test_a_patch_that_changes_nothing_is_not_applied(tmp_path: Path) -> None:
    top = _copy_inside_a_repository(tmp_path)
    (top / "evals" / "guard" / "bites" / "empty.patch").write_text("")
    with pytest.raises(BiteNotApplied, match="does not apply|changed no file"):
        apply_bite(Bite(name="b", patch="bites/empty.patch", fails=["x"]), top / "evals" / "guard", top)


def test_a_replaced_folder_is_not_applied_rather_than_a_crash(tmp_path: Path) -> None:
    top = _copy_inside_a_repository(tmp_path)
    (top / "evals" / "guard" / "fixtures").mkdir()
    with pytest.raises(BiteNotApplied, match="replace fixtures: is a folder in the clean copy"):
        apply_bite(Bite(name="b", replace={"fixtures": "product.txt"}, fails=["x"]), top / "evals" / "guard", top)


_paths = st.text(st.characters(blacklist_characters="\0\t\n", blacklist_categories=("Cs",)), min_size=1, max_size=20)


@given(st.lists(st.one_of(_paths.map(lambda p: (p,)), st.tuples(_paths, _paths)), max_size=5))
def test_numstat_paths_name_every_file_and_both_sides_of_a_rename(entries: list[tuple[str, ...]]) -> None:
    raw = ""
    for entry in entries:
        raw += f"1\t1\t{entry[0]}\0" if len(entry) == 1 else f"1\t1\t\0{entry[0]}\0{entry[1]}\0"
    assert _numstat_paths(raw.encode()) == [p for entry in entries for p in entry]
