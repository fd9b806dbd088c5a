"""The lines of the small commands: ``init``'s files and next steps, ``check``'s verdict, ``report``'s page.

Each command decides (what it wrote, what it found, which tier it chose) and
prints these lines; the words are here.
"""

from __future__ import annotations

from pathlib import Path

from evalrun.errors import file_label
from evalrun.manifest.schema import EvalSpec
from evalrun.reports_out.describe import program_where
from evalrun.text import plural

# --- evalrun init ------------------------------------------------------------

PYTHONPATH_NOTE = 'scorers import your project\'s code: pythonpath = ["."] in manifest.toml (add "src" if it lives there)'
NEXT = "next: evalrun t1, then evalrun baseline --update t1 and commit baselines/"
NEXT_WITH_MODEL = (
    "next: evalrun t1                 green now (no model, no key)",
    "      evalrun t3 --record        calls the model and records evals/answer/fixtures/ (needs OPENAI_API_KEY)",
    "        without a key: python evals/fake_upstream.py, and in another shell",
    "        OPENAI_API_KEY=sk-fake EVALRUN_UPSTREAM=http://127.0.0.1:8765/v1 evalrun t3 --record",
    "      evalrun t2                 replays the recorded answers: no model, no key; commit evals/answer/fixtures/",
    "      evalrun baseline --update t1 and evalrun baseline --update t2, then commit baselines/",
)


def init_wrote(path: Path) -> str:
    return f"wrote {file_label(path)}"


def gitignore_line(gitignore: Path, added: list[str], existed: bool) -> str:
    """``added .evalrun/ to .gitignore`` (or ``wrote .gitignore``, where there was none)."""
    lines = " and ".join(added)
    return f"{f'added {lines} to' if existed else 'wrote'} {file_label(gitignore)}"


def init_next_lines(model: bool) -> list[str]:
    """What a new Python project does next: with ``--model``, record with t3 and replay with t2."""
    return [PYTHONPATH_NOTE, *(NEXT_WITH_MODEL if model else [NEXT])]


def node_next_lines(runner: str | None) -> list[str]:
    """What a new Node project does next; ``runner``: the vitest or jest of its package.json, or None."""
    lines = ["node project: evals/example/score.mjs is a Node scorer; .github/workflows/evals.yml sets up Node and Python"]
    if runner == "vitest":
        lines.append("evals/unit runs vitest with evalrun's assertion counts (evals/unit/evalrun.setup.mjs); its tests "
                     "are *.eval.mjs, which vitest's default include (*.test.*, *.spec.*) does not collect")
    elif runner == "jest":
        lines.append("evals/unit runs jest with evalrun's assertion counts (evals/unit/evalrun.setup.cjs); it needs "
                     "jest-junit (npm install --save-dev jest-junit); its tests are *.eval.cjs, which jest's "
                     "default testMatch does not collect")
    else:
        lines.append("no vitest or jest in package.json: add one (npm install --save-dev vitest) and run init in a "
                     "fresh folder to see its eval, or follow docs/recipes-junit.md")
    lines.append(NEXT)
    return lines


# --- evalrun check -----------------------------------------------------------


def check_warning(problem: str) -> str:
    return f"warning: {problem}"


def missing_program(manifest: Path, index: int, spec: EvalSpec, problem: str) -> str:
    """``manifest.toml: evals[0] ("a").run[0]: program not found: pyhton (run[0] is looked up ...)``."""
    return f'{file_label(manifest)}: evals[{index}] ("{spec.name}").run[0]: {problem} ({program_where(spec)})'


def upstream_warning(problem: str) -> str:
    """An upstream variable of this machine's that ``evalrun t3`` here would refuse (``evalrun check``)."""
    return f"evalrun t3 here would refuse it: {problem}"


def check_verdict(manifest: Path, evals: int, absolute: int, missing: int) -> str:
    """``manifest.toml: valid, 3 evals; no absolute paths of this machine``, then what was found."""
    return (
        f"{manifest}: valid, {plural(evals, 'eval')}; "
        + (plural(absolute, "absolute path warning") if absolute else "no absolute paths of this machine")
        + (f"; {plural(missing, 'program')} not found here" if missing else "")
    )


# --- evalrun report ----------------------------------------------------------


def chosen_tier(tier: str) -> str:
    """Why the page shows this tier when none was named (printed, and kept on the page as a note)."""
    return f"tier {tier}: the tier of the latest run in the history (name a tier to report another)"


def html_written(html: Path, tier: str, runs: int) -> str:
    return f"html: {html} ({tier}, {plural(runs, 'run')})"
