"""The ``.evalrun/`` layout has one owner (evalrun.workspace): its paths, its .gitignore, and the runs that use them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evalrun.errors import OutputError
from evalrun.workspace import FOLDER, HISTORY_FILE, Workspace, check_writable
from harness import an_eval, manifest

PACKAGE = Path(__file__).resolve().parent.parent / "evalrun"
MANIFEST = manifest(an_eval("a"), tiers={"t1": {"description": "static"}}).text
PASSING = (
    "import json, os\n"
    "json.dump({'checks': [{'name': 'ok', 'assertions': 1, 'passed': True}]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
)


def test_every_path_of_the_layout(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    folder = tmp_path / ".evalrun"
    assert ws.folder == folder
    assert ws.results("t1") == folder / "results" / "t1.json"
    assert ws.results("t2", "2/3") == folder / "results" / "t2.shard-2-of-3.json"
    assert ws.results("t2", " 2 / 3 ") == folder / "results" / "t2.shard-2-of-3.json"
    assert ws.bites_results("t1") == folder / "results" / "bites-t1.json"
    assert ws.bites_results("t1", "1/2") == folder / "results" / "bites-t1.shard-1-of-2.json"
    assert ws.services == folder / "services"
    assert ws.logs == folder / "logs"
    assert ws.lock("t1.toml") == folder / "locks" / "t1.toml.lock"
    assert ws.history == folder / "history.sqlite"
    assert HISTORY_FILE == Path(".evalrun/history.sqlite")


def test_ensure_makes_the_folder_with_a_gitignore_of_everything(tmp_path: Path) -> None:
    folder = Workspace(tmp_path).ensure()
    assert folder == tmp_path / ".evalrun" and folder.is_dir()
    lines = (folder / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert lines[-1] == "*"


def test_ensure_keeps_a_gitignore_the_user_changed(tmp_path: Path) -> None:
    (tmp_path / ".evalrun").mkdir()
    (tmp_path / ".evalrun" / ".gitignore").write_text("*\n!keep.json\n", encoding="utf-8")
    Workspace(tmp_path).ensure()
    assert (tmp_path / ".evalrun" / ".gitignore").read_text(encoding="utf-8") == "*\n!keep.json\n"


def test_the_baseline_lock_and_the_history_file_are_the_workspace_s(tmp_path: Path) -> None:
    from evalrun.baseline import baseline_lock, baseline_path
    from evalrun.history.location import locate_history
    from evalrun.manifest import load_manifest

    (tmp_path / "manifest.toml").write_text('[tiers.t1]\ndescription = "static"\n', encoding="utf-8")
    manifest = load_manifest(tmp_path / "manifest.toml")
    ws = Workspace(manifest.root)
    assert baseline_lock(manifest, baseline_path(manifest, "t1")) == ws.lock("t1.toml")
    location = locate_history(manifest, {})
    assert location is not None and Path(location.target) == ws.history


def test_a_run_writes_its_results_and_gitignore_where_the_workspace_says(project) -> None:
    p = project({"manifest.toml": MANIFEST, "evals/a/score.py": PASSING})
    assert p.run("t1").code == 0
    ws = Workspace(p.root)
    assert ws.results("t1").is_file()
    assert ws.results_lock("t1").is_file() and ws.results_lock("t1").parent == ws.results("t1").parent  # listed, too
    assert (ws.folder / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert ws.history.is_file()


def test_no_other_module_spells_the_layout() -> None:
    """A path joined onto ``.evalrun`` anywhere but evalrun/workspace.py is a second owner of the layout."""
    # joined onto, a path under it, the bare folder name (a set of folders to skip), a results path in a message
    spelled = re.compile(r"""/ *["']\.evalrun["']|["']\.evalrun["'] */|["']\.evalrun/(results|services|logs|locks|history)"""
                         r"""|["']\.evalrun["']|\(\.evalrun/results/""")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "workspace.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if spelled.search(line) and not line.lstrip().startswith(("#", '"', "'"))
    ]
    assert offenders == []
    assert FOLDER == ".evalrun"


@pytest.mark.parametrize("make", ["dir", "file"])
def test_check_writable_names_the_flag(tmp_path: Path, make: str) -> None:
    target = tmp_path / "out"
    if make == "dir":
        target.mkdir()
        with pytest.raises(OutputError, match=r"^--json .*: is a directory; pass a file path"):
            check_writable(target, "--json")
    else:
        assert check_writable(target, "--json") == target
        assert list(tmp_path.iterdir()) == []  # the probe file is gone again


def test_only_reports_out_names_a_colour() -> None:
    """Colour is presentation: a colour name outside evalrun/reports_out/ is a second place that chooses one."""
    colour = re.compile(r"""["'](red|green|yellow|blue|cyan|magenta|bold red|bold green|dim)["']""")
    offenders = [
        f"{path.relative_to(PACKAGE)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if "reports_out" not in path.relative_to(PACKAGE).parts
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if colour.search(line)
    ]
    assert offenders == []
