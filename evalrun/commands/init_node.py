"""What ``evalrun init`` writes in a Node project (a folder with a ``package.json``).

A Node team gets a Node start: a t1 scorer in plain JavaScript that writes
evalrun's JSON report (no dependency), a t1 eval of the test runner the
project already uses (vitest or jest, read from ``package.json``) with
evalrun's assertion-count setup file copied in, so removing an ``expect`` is
"asserts less" (exit 3), and a GitHub Actions workflow that sets up Node
(``setup-node``, ``npm ci``) as well as Python for evalrun.

The runner's eval tests are named ``*.eval.mjs`` / ``*.eval.cjs``: vitest's and
jest's default globs (``*.test.*``, ``*.spec.*``) do not collect them, so the
project's own unit run never runs them twice; the eval's own config collects
only them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalrun.reports_in.assertion_counts import setup_file_path
from evalrun.errors import UsageError, file_label
from evalrun.files import FileReadError, read_bounded

_PACKAGE_LIMIT = 4 * 1024 * 1024
RUNNERS = ("vitest", "jest")


@dataclass(frozen=True)
class NodeProject:
    runner: str | None  # vitest or jest, as package.json's dependencies say; None: neither
    lockfile: bool  # package-lock.json is there: the workflow runs npm ci


def node_project(folder: Path) -> NodeProject | None:
    """The folder's Node project, or None when it has no ``package.json``; exit 2 for one that is not JSON."""
    path = folder / "package.json"
    if not path.exists():
        return None
    try:
        data = json.loads(read_bounded(path, _PACKAGE_LIMIT, "a package.json"))
    except FileReadError as exc:
        raise UsageError(f"init: {file_label(path)}: {exc.reason}; fix it, or run init in another folder") from None
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"init: {file_label(path)}: not valid JSON ({str(exc)[:120]}); fix it, "
                         f"or run init in another folder") from None
    deps: set[str] = set()
    if isinstance(data, dict):
        for key in ("dependencies", "devDependencies"):
            if isinstance(data.get(key), dict):
                deps.update(data[key])
    runner = next((r for r in RUNNERS if r in deps), None)
    return NodeProject(runner=runner, lockfile=(folder / "package-lock.json").exists())


def node_manifest(project: NodeProject) -> str:
    return MANIFEST.format(unit=UNIT_EVAL[project.runner] if project.runner else NO_RUNNER)


def node_files(folder: Path, project: NodeProject) -> dict[Path, str]:
    files = {
        folder / "evals" / "example" / "score.mjs": SCORER,
        folder / ".github" / "workflows" / "evals.yml": workflow(project),
    }
    unit = folder / "evals" / "unit"
    if project.runner == "vitest":
        files[unit / "vitest.config.mjs"] = VITEST_CONFIG
        files[unit / "evalrun.setup.mjs"] = setup_file_path("vitest").read_text(encoding="utf-8")
        files[unit / "slugify.eval.mjs"] = VITEST_TEST
    elif project.runner == "jest":
        files[unit / "jest.config.cjs"] = JEST_CONFIG
        files[unit / "evalrun.setup.cjs"] = setup_file_path("jest").read_text(encoding="utf-8")
        files[unit / "junitTestCaseProperties.js"] = "module.exports = (result) => ({ status: result.status });\n"
        files[unit / "slugify.eval.cjs"] = JEST_TEST
    return files


def workflow(project: NodeProject) -> str:
    install = "npm ci" if project.lockfile else "npm install"
    cache = "\n          cache: npm" if project.lockfile else ""
    return WORKFLOW.format(install=install, cache=cache)


# The tier tables `evalrun init` writes for Python and Node projects alike (evalrun.commands.init's too).
TIER_TABLES = '''\
[tiers.t1]
description = "static: no services, no database, no model key (every pull request)"
skips = "fail"                  # a skipped t1 eval fails the run: t1 has no excuse to skip

[tiers.t2]
description = "replay: local services, recorded model answers"

[tiers.t3]
description = "live: real model calls, nightly"
'''

MANIFEST = '''\
# evalrun manifest: which evals run in which tier. Reference: the evalrun README.
# A tier is a promise about what its evals need, so CI can run each where it fits.

''' + TIER_TABLES + '''\
# budget = {{ calls = 200, tokens = 500000 }}   # stop live calls past this
# require = ["env:OPENAI_API_KEY"]            # refuse the whole tier when unmet

[baseline]
dir = "baselines"               # evalrun baseline --update t1 writes baselines/t1.toml

# A scorer in JavaScript that writes evalrun's JSON report to $EVALRUN_REPORT.
# TypeScript: write score.ts and run it with your project's own runner,
# e.g. run = ["npx", "--no", "--", "tsx", "score.ts"].
[[evals]]
name = "example"
tier = "t1"
dir = "evals/example"
run = ["node", "score.mjs"]
timeout = 60
{unit}'''

NO_RUNNER = '''
# Your test runner as an eval: see docs/recipes-junit.md (vitest, jest, node --test).
'''

_GLOB_NOTE = '''\
# Its tests are evals/unit/*.eval.{ext}: the runner's default globs (*.test.*, *.spec.*)
# do not collect them, so your own unit run never runs them. A file here named
# *.test.* would be collected by your unit run too, unless its config excludes evals/**.'''

UNIT_EVAL = {
    "vitest": f'''
# vitest as an eval: each test is a check; evalrun.setup.mjs records each test's expect()
# count, so removing an expect from a baselined test is "asserts less" (exit 3).
{_GLOB_NOTE.format(ext="mjs")}
[[evals]]
name = "unit"
tier = "t1"
dir = "evals/unit"
run = ["npx", "--no", "--", "vitest", "run", "--config", "vitest.config.mjs",
       "--reporter=junit", "--outputFile=out/unit.xml", "--reporter=default"]
format = "junit"
junit = "out/unit.xml"
timeout = 120
''',
    "jest": f'''
# jest as an eval (with jest-junit: npm install --save-dev jest-junit): each test is a
# check; evalrun.setup.cjs records each test's expect() count, so removing an expect from
# a baselined test is "asserts less" (exit 3).
{_GLOB_NOTE.format(ext="cjs")}
[[evals]]
name = "unit"
tier = "t1"
dir = "evals/unit"
run = ["npx", "--no", "--", "jest", "--ci", "--config", "jest.config.cjs"]
format = "junit"
junit = "out/unit.xml"
timeout = 120
''',
}

SCORER = '''\
// An example scorer in plain JavaScript: each check counts its assertions, and
// evalrun gates on the checks' names and counts (a check that asserts less is exit 3).
// It writes evalrun's JSON report to $EVALRUN_REPORT. Replace slugify with your code:
// import { slugify } from '../../src/slugify.js';
import { writeFileSync } from 'node:fs';

const checks = [];

function check(name, body) {
  let assertions = 0;
  const failures = [];
  const c = {
    equal(got, want) {
      assertions += 1;
      if (got !== want) failures.push(`expected ${JSON.stringify(want)}, got ${JSON.stringify(got)}`);
    },
  };
  try {
    body(c);
  } catch (error) {
    failures.push(`threw ${error}`);
  }
  checks.push({ name, assertions, passed: failures.length === 0, ...(failures.length ? { message: failures.join('; ') } : {}) });
}

function slugify(title) { // the code under test; replace it with yours
  return title.trim().toLowerCase().split(/\\s+/).join('-');
}

check('slugify joins words with hyphens', (c) => {
  c.equal(slugify('Hello World'), 'hello-world');
  c.equal(slugify('  many   spaces '), 'many-spaces');
});

check('slugify lowercases', (c) => {
  c.equal(slugify('ABC'), 'abc');
});

writeFileSync(process.env.EVALRUN_REPORT, JSON.stringify({ checks, metrics: { examples: 3 } }));
'''

VITEST_CONFIG = '''\
// The unit eval's own vitest config: only this folder's *.eval.mjs files, and evalrun's
// setup file, which records each test's expect() count for evalrun (outside evalrun it does nothing).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['**/*.eval.mjs'],
    setupFiles: ['./evalrun.setup.mjs'],
  },
});
'''

# The example unit tests, for vitest and jest alike (each file names slugify its own way).
SLUGIFY_TESTS = '''
describe('slugify', () => {
  it('joins words with hyphens', () => {
    expect(slugify('Hello World')).toBe('hello-world');
    expect(slugify('  many   spaces ')).toBe('many-spaces');
  });
  it('lowercases', () => {
    expect(slugify('ABC')).toBe('abc');
  });
});
'''

VITEST_TEST = '''\
import { describe, it, expect } from 'vitest';

function slugify(title) { // import your code instead: import { slugify } from '../../src/slugify.js';
  return title.trim().toLowerCase().split(/\\s+/).join('-');
}
''' + SLUGIFY_TESTS

JEST_CONFIG = '''\
// The unit eval's own jest config: only this folder's *.eval.cjs files, evalrun's setup file
// (each test's expect() count, for evalrun), and jest-junit named by file (docs/recipes-junit.md).
module.exports = {
  rootDir: __dirname,
  testMatch: ['<rootDir>/**/*.eval.cjs'],
  setupFilesAfterEnv: ['<rootDir>/evalrun.setup.cjs'],
  reporters: ['default', ['jest-junit', {
    outputDirectory: __dirname,
    outputName: 'out/unit.xml',
    suiteNameTemplate: '{filepath}',
    classNameTemplate: '{classname}',
    titleTemplate: '{title}',
    ancestorSeparator: ' > ',
    addFileAttribute: 'true',
    reportTestSuiteErrors: 'true',
    testCasePropertiesFile: 'junitTestCaseProperties.js',
    testCasePropertiesDirectory: __dirname,
  }]],
};
'''

JEST_TEST = '''\
function slugify(title) { // require your code instead: const { slugify } = require('../../src/slugify');
  return title.trim().toLowerCase().split(/\\s+/).join('-');
}
''' + SLUGIFY_TESTS

WORKFLOW = '''\
# evalrun's t1 on every pull request: Node for your code and its tests, Python for evalrun.
# Pin evalrun where you got it (OWNER/REPO is a placeholder; see evalrun's README, "Installing").
name: evals

on:
  pull_request:
  workflow_dispatch:

permissions:
  contents: read

env:
  EVALRUN: "evalrun-gate @ git+https://github.com/OWNER/REPO@v0.1.0"

jobs:
  t1:
    runs-on: ubuntu-latest
    timeout-minutes: 20
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
        with:
          node-version: "20"{cache}
      - name: Install the project
        run: {install}
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - name: Install evalrun
        run: python -m pip install "$EVALRUN"
      - name: evalrun t1
        run: evalrun t1 --junit reports/t1.xml
      - name: Upload the report
        if: ${{{{ !cancelled() }}}}
        uses: actions/upload-artifact@v4
        with:
          name: evalrun-t1
          path: reports/
'''
