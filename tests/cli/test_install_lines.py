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


# Every way the README and docs install evalrun works from a fresh clone of this repository, which has no
# release tag and is not on the index: the clone itself, a wheel built from it installed by a relative path
# (CI has the project's checkout, not this machine's folders), or a requirement pinned to a commit.
# (Each form was installed for real from `git clone` of this repository: see the commit that added this.)
_CLONE = "evalrun-src"
_EXTRAS = r"(?:\[(?:openai|postgres|openai,postgres|inspect|dev)\])?"


def _working_forms(version: str) -> list[re.Pattern[str]]:
    wheel = re.escape(f"wheels/evalrun_gate-{version}-py3-none-any.whl")
    return [re.compile(pattern) for pattern in (
        rf"^git clone https://github\.com/OWNER/REPO {_CLONE}$",
        rf"^pip install \"\.\.?/{_CLONE}{_EXTRAS}\"$",  # the clone, by a relative path
        rf"^pip wheel --no-deps -w wheels/ \./{_CLONE}$",
        rf"^pip install \"\./{wheel}{_EXTRAS}\"$",  # the committed wheel, relative
        rf"^\./{wheel}{_EXTRAS}$",  # the same, as a requirements line
        rf"^evalrun-gate{_EXTRAS} @ git\+https://github\.com/OWNER/REPO@COMMIT$",  # a commit, not a tag
        r"^(?:python3 -m venv \.venv && \. \.venv/bin/activate && )?pip install -e (?:\.|'\.\[(?:dev|postgres)\]')"
        r"(?: && (?:evalrun t1|python -m pytest -q))?$",  # this repository's own set-up commands
    )]


def _install_lines(text: str) -> list[str]:
    """The commands and requirement lines that install evalrun itself (not pytest, promptfoo, ...)."""
    found = []
    for line in text.splitlines():
        for part in re.split(r"`", line):
            command = part.split(" #", 1)[0].strip()
            if re.search(r"evalrun[-_]gate|evalrun-src|pip install -e|pip wheel|git clone", command) and (
                    INSTALL.search(command) or "pip wheel" in command or command.startswith(("git clone", "./wheels")) or re.match(r"evalrun-gate\S* (?:@|==)", command)):
                found.append(command)
    return found


def test_every_install_line_of_the_readme_and_docs_is_a_form_that_works_from_a_clone() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    forms = _working_forms(version)
    documents = {**_documents(), "CONTRIBUTING.md": (REPO / "CONTRIBUTING.md").read_text()}
    seen: dict[str, list[str]] = {}
    for label, text in documents.items():
        for line in _install_lines(text):
            seen.setdefault(label, []).append(line)
    bad = [f"{label}: {line}" for label, lines in seen.items() for line in lines
           if not any(form.match(line) for form in forms)]
    assert not bad, "install lines that do not work from a fresh clone (no tag, not on the index):\n" + "\n".join(bad)
    guide = seen["docs/adding-evalrun.md"]
    for label in ("README.md", "docs/adding-evalrun.md"):  # both routes shown, the wheel by a relative path
        assert any(forms[1].match(line) for line in seen[label]), (label, seen[label])
        assert any(forms[3].match(line) for line in seen[label]), (label, seen[label])
    assert any(forms[4].match(line) for line in guide) and any(forms[5].match(line) for line in guide), guide
    # No tag and no machine path anywhere: `@v0.1.0` named a tag that does not exist, file://$PWD a folder CI lacks.
    for label, text in documents.items():
        assert not re.search(r"git\+\S+@v\d", text) and "file://$PWD" not in text, label


def test_the_install_line_scanner_refuses_the_forms_that_did_not_work() -> None:
    forms = _working_forms("0.1.0")
    for line in ('pip install "evalrun-gate[openai] @ git+https://github.com/OWNER/REPO@v0.1.0"',
                 'pip install "evalrun-gate[openai] @ file://$PWD/wheels/evalrun_gate-0.1.0-py3-none-any.whl"',
                 'pip install "evalrun-gate[openai]==0.1.0"', 'pip install "./wheels/evalrun_gate-0.0.9-py3-none-any.whl"'):
        assert _install_lines(line) == [line] and not any(f.match(line) for f in forms), line


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
