"""``evalrun init [FOLDER]``: a starting project that is green on the first ``evalrun t1``.

It writes a commented manifest, one t1 eval that uses the scorer SDK, an empty
``baselines/`` and a ``.gitignore`` line for ``.evalrun/``, and refuses to
overwrite anything: every file is checked before the first one is written.
"""

from __future__ import annotations

from pathlib import Path

from evalrun.atomic import write_atomic
from evalrun.reports_out.terminal import Console
from evalrun.errors import UsageError, file_label

MANIFEST = '''\
# evalrun manifest: which evals run in which tier. Reference: the evalrun README.
# A tier is a promise about what its evals need, so CI can run each where it fits.

[tiers.t1]
description = "static: no services, no database, no model key (every pull request)"
skips = "fail"                  # a skipped t1 eval fails the run: t1 has no excuse to skip

[tiers.t2]
description = "replay: local services, recorded model answers"

[tiers.t3]
description = "live: real model calls, nightly"
# budget = { calls = 200, tokens = 500000 }   # stop live calls past this
# require = ["env:OPENAI_API_KEY"]            # refuse the whole tier when unmet

[baseline]
dir = "baselines"               # evalrun baseline --update t1 writes baselines/t1.toml

# [history]                     # every run is kept in .evalrun/history.sqlite by default
# url = "${EVALRUN_HISTORY_URL}"  # or a team's PostgreSQL: postgresql://user:password@host/db

[[evals]]
name = "example"
tier = "t1"
dir = "evals/example"
run = ["python", "score.py"]    # any program; it writes its report to $EVALRUN_REPORT
timeout = 60
'''

SCORER = '''\
"""An example scorer: each check counts its assertions; evalrun gates on names and counts."""

from evalrun import scorer


def slugify(title: str) -> str:  # the code under test; replace it with yours
    return "-".join(title.lower().split())


with scorer.check("slugify joins words with hyphens") as c:
    c.equal(slugify("Hello World"), "hello-world")
    c.equal(slugify("  many   spaces "), "many-spaces")

with scorer.check("slugify lowercases") as c:
    c.equal(slugify("ABC"), "abc")

scorer.metric("examples", 3)
'''

GITIGNORE_LINE = ".evalrun/"


def init_project(*, folder: Path, console: Console) -> int:
    files = {
        folder / "manifest.toml": MANIFEST,
        folder / "evals" / "example" / "score.py": SCORER,
        folder / "baselines" / ".gitkeep": "",
    }
    existing = [p for p in [*files, folder / "evals" / "example", folder / "baselines"] if p.exists()]
    if existing:
        raise UsageError(f"init: {file_label(existing[0])} already exists; evalrun init overwrites nothing, "
                         f"run it in an empty folder")
    gitignore = folder / ".gitignore"
    current = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
    for path, text in files.items():
        write_atomic(path, text)
        path.chmod(0o644)  # files to commit, not private temp files
        console.line(f"wrote {file_label(path)}")
    if GITIGNORE_LINE not in current.splitlines():
        joiner = "" if not current or current.endswith("\n") else "\n"
        write_atomic(gitignore, f"{current}{joiner}{GITIGNORE_LINE}\n")
        gitignore.chmod(0o644)
        console.line(f"{'added .evalrun/ to' if current else 'wrote'} {file_label(gitignore)}")
    console.line("next: evalrun t1, then evalrun baseline --update t1 and commit baselines/")
    return 0
