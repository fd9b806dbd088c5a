"""``pythonpath = ["src"]``: scorers import the project under test without editing sys.path."""

from __future__ import annotations

from harness import eval_entry

# A scorer two folders down that imports the project's own code, and nothing else.
SCORER = """
from evalrun import scorer
from shop.prices import total  # the project's code, under src/ (no sys.path edit anywhere)
import helpers  # a module at the project's root

with scorer.check("total adds the prices") as c:
    c.equal(total([1, 2, 3]), 6)
    c.equal(helpers.NAME, "root helper")
"""


def _project(project, pythonpath: str | None):
    head = f"pythonpath = {pythonpath}\n" if pythonpath is not None else ""
    entry = eval_entry("prices").replace('dir = "evals/prices"', 'dir = "evals/shop/prices"')
    return project(
        {
            "manifest.toml": head + "[tiers.t1]\n" + entry,
            "src/shop/__init__.py": "",
            "src/shop/prices.py": "def total(xs):\n    return sum(xs)\n",
            "helpers.py": 'NAME = "root helper"\n',
            "evals/shop/prices/score.py": SCORER,
        }
    )


def test_a_scorer_in_a_subfolder_imports_the_project_from_pythonpath(project) -> None:
    proj = _project(project, '["src", "."]')
    r = proj.run("t1", env={"PYTHONPATH": "/nonexistent/kept-after"})
    assert r.code == 0, r.output
    assert proj.eval_result("prices")["status"] == "passed"


def test_without_pythonpath_the_same_scorer_cannot_import_the_project(project) -> None:
    proj = _project(project, None)
    r = proj.run("t1")
    assert r.code == 1, r.output
    assert "ModuleNotFoundError: No module named 'shop'" in proj.eval_result("prices")["message"]


def test_the_python_probe_sees_the_pythonpath_too(project) -> None:
    proj = _project(project, '["src", "."]')
    manifest = proj.root / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('run = ["python", "score.py"]', 'run = ["python", "score.py"]\nrequires = ["python:shop.prices"]'))
    r = proj.run("dry", "t1")
    assert r.code == 0 and "prices: would run" in r.out, r.output


def test_a_pythonpath_entry_that_is_not_a_folder_is_one_line_exit_2(project) -> None:
    for value, words in (
        ('["lib"]', "manifest.toml: pythonpath[0]: 'lib' is not a folder next to the manifest; create it or fix the path"),
        ('["src", "/usr/lib"]', "manifest.toml: pythonpath[1]: '/usr/lib' is absolute; name the folder relative to the manifest"),
        ('"src"', "pythonpath"),
    ):
        r = _project(project, value).run("t1")
        assert r.code == 2, (value, r.output)
        assert words in r.err and len(r.err.strip().splitlines()) == 1, (value, r.err)
