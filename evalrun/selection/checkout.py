"""The repository as git sees it: its top level, and clean exports of its commits.

``clean_checkout`` exports ``git archive HEAD`` into a temporary folder so a
run there sees only what is committed: a dependency on an untracked file or a
local build output fails on the author's machine, not first in CI. With
``worktree=True`` the uncommitted changes to tracked files are laid on top
(untracked files never are: leaving them out is the point). Git itself is run
by ``evalrun.git``, the one helper that runs it.
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalrun.errors import UsageError
from evalrun.git import git_says, run_git, split_z

def repo_toplevel(path: Path, flag: str) -> Path:
    """The top folder of the git repository holding ``path`` (a file or a folder)."""
    folder = path if path.is_dir() else path.parent
    proc = run_git(folder, ["rev-parse", "--show-toplevel"], flag)
    if proc.returncode != 0:
        raise UsageError(
            f"{flag}: {folder} is not inside a git repository ({git_says(proc)}); run without {flag} or git init"
        )
    return Path(proc.stdout.decode("utf-8").strip()).resolve()


@contextmanager
def clean_checkout(path: Path, worktree: bool) -> Iterator[Path]:
    """Export HEAD (plus, with ``worktree``, uncommitted tracked changes) and yield ``path``'s twin in it.

    ``path`` is any file or folder inside the repository, usually the manifest;
    the yielded path is the same file or folder inside the export. The export
    is removed when the block ends, whatever happens in it.
    """
    flag = "--worktree" if worktree else "--clean-checkout"
    path = path.resolve()
    top = repo_toplevel(path, flag)
    head = run_git(top, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], flag)
    if head.returncode != 0:
        raise UsageError(f"{flag}: {top} has no commit yet; commit your files first, then rerun")
    export = Path(tempfile.mkdtemp(prefix="evalrun-checkout-")).resolve()
    try:
        _export_head(top, export, flag)
        if worktree:
            _lay_worktree(top, export, flag)
        twin = export / path.relative_to(top)
        if not twin.exists():
            rel = path.relative_to(top)
            hint = "git add it" if worktree else "commit it, or add --worktree after git add"
            raise UsageError(f"{flag}: {rel} is not committed, so the clean checkout has no such file; {hint}")
        yield twin
    finally:
        shutil.rmtree(export, ignore_errors=True)


def _export_head(top: Path, export: Path, flag: str) -> None:
    import tarfile  # only a --clean-checkout run unpacks: every run's git calls come through this module

    archive = export / ".evalrun-head.tar"
    with archive.open("wb") as fh:
        proc = run_git(top, ["archive", "--format=tar", "HEAD"], flag, stdout=fh.fileno())
    if proc.returncode != 0:
        raise UsageError(f"{flag}: git archive HEAD failed in {top} ({git_says(proc)}); check the repository")
    refused = getattr(tarfile, "FilterError", _Refused)
    try:
        with tarfile.open(archive) as tar:
            # The "data" filter refuses absolute paths, '..' and links leaving
            # the export: a committed link to the author's disk fails loudly here.
            if hasattr(tarfile, "data_filter"):
                tar.extractall(export, filter="data")
            else:  # Python 3.11.0-3.11.3 (Debian 12's 3.11.2): the same refusals, checked before unpacking
                tar.extractall(export, members=_checked(tar.getmembers()))
    except (refused, _Refused) as exc:
        member = getattr(exc, "tarinfo", None)
        name = member.name if member is not None else "a file"
        raise UsageError(
            f"{flag}: {name}: refused to unpack ({exc}); commit a link inside the repository or the file itself"
        ) from None
    except (tarfile.TarError, OSError) as exc:
        raise UsageError(
            f"{flag}: cannot unpack git archive HEAD into {export} ({exc}); check free disk space"
        ) from None
    finally:
        archive.unlink(missing_ok=True)


class _Refused(Exception):
    """A member of the archive that would land, or link, outside the export (as tarfile's FilterError)."""

    def __init__(self, message: str, tarinfo: Any) -> None:
        super().__init__(message)
        self.tarinfo = tarinfo


def _checked(members: list[Any]) -> list[Any]:
    """``members`` as tarfile's "data" filter would take them from ``git archive``, or ``_Refused``.

    For a Python without extraction filters. Checked by the path's text alone, which is enough for what
    git writes: a tree never holds a path beneath a link, so no member's folder is a link. Each member
    stays inside the export, is a file, a folder or a link, and a link points inside; a file keeps
    whether it is executable, as the filter leaves it (no set-id bits, no group or other write).
    """
    for member in members:
        name = member.name
        if name.startswith("/") or _leaves(name):
            raise _Refused(f"{name!r} would be extracted outside the destination", member)
        if member.issym():
            if member.linkname.startswith("/"):
                raise _Refused(f"{name!r} is a link to an absolute path", member)
            if _leaves(posixpath.join(posixpath.dirname(name), member.linkname)):
                raise _Refused(f"{name!r} would link to {member.linkname!r}, which is outside the destination", member)
        elif member.islnk():
            if member.linkname.startswith("/") or _leaves(member.linkname):
                raise _Refused(f"{name!r} would link to {member.linkname!r}, which is outside the destination", member)
        elif not (member.isfile() or member.isdir()):
            raise _Refused(f"{name!r} is a special file", member)
        if member.isfile() or member.islnk():
            member.mode = (member.mode & 0o755) | 0o600
            if not member.mode & 0o100:
                member.mode &= ~0o111
        elif member.isdir():
            member.mode &= 0o755
    return members


def _leaves(path: str) -> bool:
    """Whether a relative path, read as text, climbs above where it starts."""
    normal = posixpath.normpath(path)
    return normal == ".." or normal.startswith("../")


def _lay_worktree(top: Path, export: Path, flag: str) -> None:
    """Copy modified and added tracked files over the export; remove deleted ones."""
    # HEAD vs the working tree, staged or not; untracked files are not listed.
    proc = run_git(top, ["diff", "--name-only", "--no-renames", "-z", "HEAD", "--"], flag)
    if proc.returncode != 0:
        raise UsageError(f"{flag}: git diff HEAD failed in {top} ({git_says(proc)}); check the repository")
    for rel in split_z(proc.stdout):
        source, target = top / rel, export / rel
        if source.is_symlink() or source.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.is_file():
                target.unlink()
            shutil.copy2(source, target, follow_symlinks=False)
        elif target.is_symlink() or target.is_file():
            target.unlink()
