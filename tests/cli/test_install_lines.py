"""Every install line users read names evalrun's distribution, evalrun-gate; none installs the other "evalrun".

The name ``evalrun`` on the package index belongs to an unrelated project. The
README, ``docs/``, ``examples/`` and what ``evalrun init`` (and ``init --model``)
writes and prints are scanned for install commands (pip, pipx, uv, poetry) and
requirement lines; any that names the distribution ``evalrun`` fails, with the
file and line.
"""

from __future__ import annotations

import re
import shlex
import tomllib

from harness import REPO

INSTALL = re.compile(r"\b(?:uv\s+pip\s+install|pip3?\s+(?:install|download)|pipx\s+install|uv\s+add|poetry\s+add)\b(.*)")
# A requirements-file line: the name, maybe extras, then a version, a direct reference, or nothing.
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:==|>=|<=|~=|!=|@|;|$)")
OPTIONS_WITH_VALUE = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-w", "--wheel-dir",
                      "-d", "--dest", "-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--prefix",
                      "--target", "-t", "--python"}
STOP = {"&&", "||", ";", "|", "#", "&"}
OTHER_PROJECT = "evalrun"


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_names(line: str) -> list[str]:
    """The distribution names an install command on ``line`` asks for (paths, URLs and files are not names)."""
    match = INSTALL.search(line)
    if not match:
        return []
    rest = match.group(1).split(" #", 1)[0]
    try:
        words = shlex.split(rest, comments=False)
    except ValueError:
        words = rest.split()
    names: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in STOP or word.startswith("#"):
            break
        if word.startswith("-"):
            skip = word in OPTIONS_WITH_VALUE
            continue
        if word.startswith((".", "/", "$", "~", "git+", "http:", "https:", "file:")) or word.endswith((".whl", ".tar.gz")):
            continue
        found = REQUIREMENT.match(word) or re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)", word)
        if found:
            names.append(_normalised(found.group(1)))
    return names


def offending_lines(text: str, label: str) -> list[str]:
    bad = []
    for number, line in enumerate(text.splitlines(), 1):
        requirement = REQUIREMENT.match(line)
        names = installed_names(line) + ([_normalised(requirement.group(1))] if requirement and not INSTALL.search(line) else [])
        if OTHER_PROJECT in names:
            bad.append(f"{label}:{number}: {line.strip()}")
    return bad


def _documents() -> dict[str, str]:
    paths = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "examples").rglob("*"))]
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in paths if p.is_file()}


def test_the_scanner_finds_the_other_projects_name_and_passes_ours() -> None:
    for line in ("python -m pip install evalrun # or your project's pinned requirements",
                 "pip install evalrun==0.4.2", 'pip install "evalrun[dev]"', "pip install -U pip evalrun",
                 "uv add evalrun", "pipx install evalrun", "evalrun>=0.1", "evalrun @ git+https://github.com/o/r@v1"):
        assert offending_lines(line, "x"), line
    for line in ('pip install "evalrun-gate[openai] @ git+https://github.com/OWNER/evalrun@v0.1.0"',
                 "pip install -e '.[dev]' && evalrun t1", "python -m pip install -r requirements.txt",
                 "pip wheel --no-deps -w wheels/ . && pip install wheels/evalrun_gate-0.1.0-py3-none-any.whl",
                 "evalrun t1", "evalrun-gate[openai]==0.1.0", "pip install -e . && evalrun t1"):
        assert not offending_lines(line, "x"), line


def test_no_install_line_in_the_readme_docs_or_examples_names_the_other_project() -> None:
    documents = _documents()
    assert "README.md" in documents and "examples/github-actions/evals.yml" in documents
    bad = [line for label, text in documents.items() for line in offending_lines(text, label)]
    assert not bad, "these install the unrelated PyPI project 'evalrun'; use evalrun-gate:\n" + "\n".join(bad)


def test_the_readme_and_the_guide_install_evalrun_gate_pinned_to_this_version() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["name"] == "evalrun-gate"
    for label in ("README.md", "docs/adding-evalrun.md"):
        text = _documents()[label]
        pinned = [line for line in text.splitlines() if "evalrun-gate" in " ".join(installed_names(line))
                  and f"@v{version}" in line]
        assert pinned, f"{label}: no pip install of evalrun-gate pinned to v{version}"


def test_what_init_writes_and_prints_installs_nothing_of_the_other_project(project) -> None:
    proj = project()
    for folder, args in (("plain", ("init", "plain")), ("model", ("init", "model", "--model"))):
        r = proj.run(*args)
        assert r.code == 0, r.output
        root = proj.root / folder
        written = {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*") if p.is_file()}
        assert "manifest.toml" in written
        bad = offending_lines(r.out, " ".join(args)) + [
            line for label, text in written.items() for line in offending_lines(text, label)]
        assert not bad, bad
