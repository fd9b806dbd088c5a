"""``evalrun init`` in a Node project: a Node scorer, the project's vitest or jest as an eval with assertion counts.

Each scenario is a fresh Node project as npm leaves it (``package.json``, the
runner in ``node_modules`` with its ``.bin`` link), the real runner linked in
from ``EVALRUN_NPM_TOOLS``; ``init`` then ``t1`` must be green with real node.
The workflow init writes is checked by actionlint and GitHub's schema in
tests/test_ci_workflow.py.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from evalrun.reports_in.assertion_counts import setup_file_path
from harness.eval_tools import npm_package

# the runner, what package.json names, what node_modules links (package -> its bin script)
RUNNERS = {
    "vitest": ({"vitest": "^4"}, {"vitest": "vitest.mjs"}),
    "jest": ({"jest": "^30", "jest-junit": "^17"}, {"jest": "bin/jest.js", "jest-junit": None}),
}

NAMES = {
    "vitest": ("slugify.eval.mjs.slugify > joins words with hyphens", "slugify.eval.mjs.slugify > lowercases"),
    "jest": ("slugify.eval.cjs > slugify.joins words with hyphens", "slugify.eval.cjs > slugify.lowercases"),
}


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (npm) is not installed")
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_init_in_a_node_project_is_green_in_t1_with_assertion_counts(project, runner: str) -> None:
    deps, links = RUNNERS[runner]
    proj = project({"package.json": json.dumps({"name": "shop", "private": True, "devDependencies": deps})})
    bin_dir = proj.root / "node_modules/.bin"
    bin_dir.mkdir(parents=True)
    for name, script in links.items():
        (proj.root / "node_modules" / name).symlink_to(npm_package(name), target_is_directory=True)
        if script:
            os.symlink(f"../{name}/{script}", bin_dir / name)

    init = proj.run("init")
    assert init.code == 0, init.output
    assert "sets up Node and Python" in init.out and "default" in init.out, init.out
    manifest = (proj.root / "manifest.toml").read_text()
    assert "pythonpath" not in manifest and 'run = ["node", "score.mjs"]' in manifest
    assert not (proj.root / "evals/example/score.py").exists()
    setup = "evalrun.setup.mjs" if runner == "vitest" else "evalrun.setup.cjs"
    assert (proj.root / "evals/unit" / setup).read_text() == setup_file_path(runner).read_text()
    workflow = (proj.root / ".github/workflows/evals.yml").read_text()
    assert "actions/setup-node@" in workflow and "run: npm install" in workflow  # no lockfile: not npm ci
    assert (proj.root / ".gitignore").read_text() == ".evalrun/\nevals/unit/out/\n"

    r = proj.run("t1")
    assert r.code == 0, r.output
    example = proj.eval_result("example")
    assert [(c["name"], c["assertions"]) for c in example["checks"]] == [
        ("slugify joins words with hyphens", 2), ("slugify lowercases", 1)]
    unit = proj.eval_result("unit")
    names = NAMES[runner]
    # expect()'s own counts, from the setup file init copied in
    assert {c["name"]: c["assertions"] for c in unit["checks"]} == {names[0]: 2, names[1]: 1}, unit["checks"]
    assert not unit["message"], unit["message"]


def test_init_refuses_a_package_json_that_is_not_json_and_writes_nothing(project) -> None:
    proj = project({"package.json": '{"name": "shop",\n'})
    r = proj.run("init")
    assert r.code == 2, r.output
    assert r.err.strip().startswith("evalrun: error: init: package.json: not valid JSON (") and "\n" not in r.err.strip()
    assert sorted(p.name for p in proj.root.iterdir()) == ["package.json"]
