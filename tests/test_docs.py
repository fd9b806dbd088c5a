"""The docs hold what evalrun does: every manifest example is a valid manifest, every documented option is real.

Every ``toml`` block of the README, CONTRIBUTING.md and docs/ that is a
manifest (not a baseline) is validated against the manifest's own schema
model, so a renamed key fails here before a user copies it. Every
``evalrun ...`` command line in their code blocks names a command that exists
and only options that command has (typer's own command tree, not a list kept
by hand). Every relative link points at a file that exists.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
import typer.main

from evalrun.cli import app
from evalrun.manifest import _RawManifest

from harness import REPO

DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _blocks(kind: str) -> list[tuple[str, str]]:
    out = []
    for path in DOCS:
        for number, match in enumerate(_BLOCK.finditer(path.read_text(encoding="utf-8"))):
            if match.group(1) == kind:
                out.append((f"{path.relative_to(REPO)}#{number}", match.group(2)))
    return out


def _is_baseline(data: dict) -> bool:
    """A baseline: tables of check counts (ints, or rate tables), and its settings/judges tables.

    Judged by the values, not by the absence of manifest keys, so a manifest example with a
    mistyped table (``[tier.t1] skips = "fail"``) is validated, and fails, rather than passed over.
    """
    def counts(table: object) -> bool:
        return isinstance(table, dict) and all(
            (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, dict) and "assertions" in v)
            for v in table.values())

    return bool(data) and all(name.startswith("/") or counts(table) for name, table in data.items())


TOML_BLOCKS = _blocks("toml")


def test_the_docs_have_manifest_examples_to_check() -> None:
    assert len(TOML_BLOCKS) > 10


@pytest.mark.parametrize(("where", "text"), TOML_BLOCKS, ids=[w for w, _ in TOML_BLOCKS])
def test_every_manifest_example_is_valid(where: str, text: str) -> None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        pytest.fail(f"{where}: not TOML: {exc}")
    if _is_baseline(data):
        return
    _RawManifest.model_validate(data)  # raises, naming the key, on anything the manifest would refuse


def _command_lines() -> list[tuple[str, str]]:
    lines = []
    for where, text in _blocks("") + _blocks("sh") + _blocks("bash") + _blocks("yaml"):
        for line in text.splitlines():
            line = line.split(" #", 1)[0].strip().removeprefix("$ ")
            for piece in re.split(r"&&|\|\||;|\|", line):
                piece = piece.strip()
                piece = re.sub(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+", "", piece)  # VAR=value evalrun ...
                if piece.startswith("evalrun ") and "{{" not in piece and "${" not in piece:
                    lines.append((where, piece))
    return lines


COMMAND_LINES = _command_lines()


def test_the_docs_have_command_lines_to_check() -> None:
    assert len(COMMAND_LINES) > 20


@pytest.mark.parametrize(("where", "line"), COMMAND_LINES, ids=[f"{w}:{line[:40]}" for w, line in COMMAND_LINES])
def test_every_documented_command_and_option_is_real(where: str, line: str) -> None:
    try:
        words = shlex.split(line)[1:]
    except ValueError:
        words = line.split()[1:]
    command = typer.main.get_command(app)
    path = ["evalrun"]
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        sub = command.commands.get(words[0])  # type: ignore[attr-defined]
        if sub is None:
            break
        command, path = sub, [*path, words.pop(0)]
    options = {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)} | {"--help"}
    for word in words:
        if word.startswith("--"):
            flag = word.split("=", 1)[0]
            assert flag in options, f"{where}: `{line}`: {' '.join(path)} has no option {flag} ({sorted(options)})"
        elif re.fullmatch(r"-[A-Za-z]", word):
            assert word in options, f"{where}: `{line}`: {' '.join(path)} has no option {word}"


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_every_relative_link_points_at_a_file(path: Path) -> None:
    for target in _LINK.findall(path.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        assert (path.parent / target).exists(), f"{path.relative_to(REPO)}: link to {target} goes nowhere"


def test_a_mistyped_manifest_example_is_no_baseline() -> None:
    assert not _is_baseline(tomllib.loads('[tier.t1]\nskips = "fail"\n'))
    assert _is_baseline(tomllib.loads('[a]\n"x" = 3\n"y" = { assertions = 2, passes = 9, runs = 10 }\n'))


def test_a_recipe_that_writes_reports_into_the_repository_says_to_ignore_them() -> None:
    """A manifest example whose report lands in an ``out/`` folder of the eval's folder (pytest's --junitxml=out/...)
    leaves files in the repository: its page says to put ``out/`` in .gitignore."""
    pages = {}
    for where, text in TOML_BLOCKS:
        data = tomllib.loads(text)
        if any(str(e.get(key, "")).startswith("out/") for e in data.get("evals", [])
               for key in ("junit", "reportlog", "promptfoo")):
            pages.setdefault(where.split("#", 1)[0], []).append(where)
    assert "docs/recipes-junit.md" in pages, pages
    for page in pages:
        text = (REPO / page).read_text(encoding="utf-8")
        assert "add `out/` to `.gitignore`" in text.replace("\n", " ").replace("**", ""), page
