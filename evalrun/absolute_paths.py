"""Absolute paths of one machine, found in eval sources by ``evalrun check``.

An eval that reads ``/home/alice/data.csv`` passes on Alice's laptop and fails
on every other machine. This module scans the manifest and the text files of
every eval's folder for the paths that give such a dependency away: this
user's home folder, the repository's own absolute path, and any
``/home/<user>/``, ``/Users/<user>/`` or ``C:\\Users\\<user>\\`` path. It only
warns: a path may sit in a comment, and the scan cannot tell.

In a git work tree it scans the files that are part of the project: tracked
ones and untracked ones git does not ignore (a new eval not yet added counts;
caches such as ``.hypothesis/`` and build outputs do not). Outside one, or
without git, it walks the eval folders.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evalrun.errors import UsageError
from evalrun.files import FileReadError, read_bounded
from evalrun.manifest import Manifest
from evalrun.git import run_git, split_z
from evalrun.workspace import FOLDER as WORKSPACE_FOLDER

MAX_BYTES = 1_000_000  # larger files are data, not sources
_SKIPPED_DIRS = {".git", "__pycache__", WORKSPACE_FOLDER, "node_modules", ".venv", "venv", ".mypy_cache", ".pytest_cache"}
# Characters that end a path in source text: whitespace, quotes, brackets, separators of lists.
_PATH_TAIL = r"[^\s'\"`<>()\[\]{},;|]*"
_GENERIC = (
    r"/home/[A-Za-z0-9._-]+/",
    r"/Users/[A-Za-z0-9._ -]+?/",
    r"[A-Za-z]:\\+Users\\+[A-Za-z0-9._ -]+?\\",
)
FIX = "use a path relative to the eval's folder or $EVALRUN_WORKDIR"


@dataclass(frozen=True)
class AbsolutePath:
    file: str  # relative to the manifest's folder
    line: int
    path: str

    def warning(self) -> str:
        return f"{self.file}:{self.line}: absolute path {self.path}; {FIX}"


def find_absolute_paths(manifest: Manifest, home: Path | None = None) -> list[str]:
    """One warning line per absolute path of a machine found in the manifest or an eval's folder."""
    return [hit.warning() for hit in scan_absolute_paths(manifest, home)]


def scan_absolute_paths(manifest: Manifest, home: Path | None = None) -> list[AbsolutePath]:
    """The hits themselves, sorted by file and line. ``home`` defaults to this user's home folder."""
    pattern = _pattern(_machine_prefixes(manifest, home if home is not None else _this_users_home()))
    hits: list[AbsolutePath] = []
    for path in _files_to_scan(manifest):
        text = _read_text(path)
        if text is None:
            continue
        label = Path(os.path.relpath(path, manifest.root)).as_posix()
        for number, line in enumerate(text.splitlines(), start=1):
            for match in pattern.finditer(line):
                hits.append(AbsolutePath(label, number, _shorten(match.group(0))))
    return sorted(set(hits), key=lambda h: (h.file, h.line, h.path))


def _this_users_home() -> Path | None:
    """This user's home folder; None for a user with neither $HOME nor a passwd entry (a container's arbitrary uid)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        return None


def _machine_prefixes(manifest: Manifest, home: Path | None) -> list[str]:
    prefixes = {str(manifest.root), str(manifest.root.resolve())}
    if home is None:
        return sorted((p for p in prefixes if p and p != os.sep), key=len, reverse=True)
    home_text = str(home)
    # A home of "/" (some service users) would flag every absolute path.
    if home_text.count(os.sep) >= 1 and home_text.rstrip(os.sep):
        prefixes.update({home_text.rstrip(os.sep), str(home.resolve()).rstrip(os.sep)})
    return sorted((p for p in prefixes if p and p != os.sep), key=len, reverse=True)


def _pattern(prefixes: list[str]) -> re.Pattern[str]:
    # Longest first, so the repository under the home folder is reported whole.
    local = [re.escape(p) + r"(?![\w.-])" for p in prefixes]
    alternatives = "|".join([*local, *_GENERIC])
    # Not preceded by a word or path character: "/x/root" is not the home "/root".
    return re.compile(rf"(?<![\w.~/\\-])(?:{alternatives}){_PATH_TAIL}")


def _files_to_scan(manifest: Manifest) -> Iterator[Path]:
    seen: set[Path] = set()
    if manifest.path.is_file():
        seen.add(manifest.path.resolve())
        yield manifest.path.resolve()
    folders = sorted({manifest.eval_dir(spec) for spec in manifest.evals})
    listed = _git_files(manifest.root, folders)
    for path in listed if listed is not None else _walk(folders):
        path = path.resolve()
        if path not in seen and path.is_file():
            seen.add(path)
            yield path


def _git_files(root: Path, folders: list[Path]) -> list[Path] | None:
    """The files git counts as the project's in ``folders``; None when ``root`` is not in a git work tree."""
    if not folders:
        return []
    specs = [f":(literal){os.path.relpath(folder, root)}" for folder in folders]
    try:
        proc = run_git(root, ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *specs],
                       "evalrun check")
    except UsageError:  # no git on PATH, or it hung: the scan is advice, walk instead
        return None
    if proc.returncode != 0:  # not a work tree (or folders outside it)
        return None
    names = {name for name in split_z(proc.stdout) if not _SKIPPED_DIRS.intersection(PurePosixPath(name).parts)}
    return [root / name for name in sorted(names)]


def _walk(folders: list[Path]) -> Iterator[Path]:
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
            for name in sorted(filenames):
                yield Path(dirpath, name)


def _read_text(path: Path) -> str | None:
    """The file as text; None for binaries, big files and what cannot be read."""
    try:
        raw = read_bounded(path, MAX_BYTES, "a source")  # a FIFO or /dev/zero among the sources is passed over
    except FileReadError:
        return None
    if b"\0" in raw[:8192]:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _shorten(path: str) -> str:
    path = path.rstrip(".:")  # the end of a sentence, not of the path
    return path if len(path) <= 120 else path[:117] + "..."
