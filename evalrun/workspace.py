"""Where evalrun writes: the ``.evalrun/`` folder beside the manifest, and the check on an output path.

This module owns the layout of that folder; no other module spells its paths::

    .evalrun/
      .gitignore                          ``*``: nothing in this folder belongs in git
      results/<tier>.json                 the tier's last run (the default ``--json``)
      results/<tier>.shard-I-of-N.json    one shard's share of it (``--shard I/N``)
      results/bites-<tier>.json           the bites' results (``evalrun bites``), sharded alike
      results/.<tier>.json.lock           held while that results file is written (beside any file: ``evalrun.locks``)
      services/                           a record of every service and scorer started, swept by the next run
      logs/                               the services' logs
      locks/<baseline file>.lock          held while a baseline is read, updated and written
      history.sqlite                      the history, unless ``[history] url`` or ``EVALRUN_HISTORY_URL`` names another

``check_writable`` is the filesystem check every command that writes runs
before any scorer starts: a path given on the command line, or one of the
paths above, is refused with one line naming the flag and the fix.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from evalrun.atomic import write_atomic, writes_in_place
from evalrun.errors import OutputError
from evalrun.locks import sidecar_lock

FOLDER = ".evalrun"
HISTORY_FILE = Path(FOLDER) / "history.sqlite"  # relative to the manifest's folder
GITIGNORE = "# written by evalrun: nothing in this folder belongs in git\n*\n"
PROJECT_GITIGNORE_LINE = f"{FOLDER}/"  # the line ``evalrun init`` adds to the project's own .gitignore


class Workspace(NamedTuple):
    """The ``.evalrun/`` folder of the project whose manifest sits in ``root``: every path in it."""

    root: Path  # the manifest's folder

    @property
    def folder(self) -> Path:
        return self.root / FOLDER

    def results(self, tier: str, shard: str | None = None) -> Path:
        """``results/<tier>.json``; a shard's own file (``shard`` as ``--shard`` gives it, ``I/N``) is ``<tier>.shard-I-of-N.json``."""
        return self._results(tier, shard)

    def bites_results(self, tier: str, shard: str | None = None) -> Path:
        """``results/bites-<tier>.json``; a shard's own file is ``bites-<tier>.shard-I-of-N.json``."""
        return self._results(f"bites-{tier}", shard)

    def _results(self, stem: str, shard: str | None) -> Path:
        folder = self.folder / "results"
        if shard:
            index, _, total = shard.replace(" ", "").partition("/")
            return folder / f"{stem}.shard-{index}-of-{total}.json"
        return folder / f"{stem}.json"

    def results_lock(self, tier: str, shard: str | None = None) -> Path:
        """``results/.<tier>.json.lock``: the sidecar lock held while the results file is written (``evalrun.locks``)."""
        return sidecar_lock(self.results(tier, shard))

    @property
    def services(self) -> Path:
        """The records of started services and scorers (``evalrun.leftovers`` sweeps what a killed run left)."""
        return self.folder / "services"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def lock(self, name: str) -> Path:
        """``locks/<name>.lock``: kept out of the committed folder whose file it guards."""
        return self.folder / "locks" / f"{name}.lock"

    @property
    def history(self) -> Path:
        """The default history store."""
        return self.root / HISTORY_FILE

    def ensure(self) -> Path:
        """The folder, made if missing, with a ``.gitignore`` of ``*`` so results are never committed by accident."""
        self.folder.mkdir(parents=True, exist_ok=True)
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            write_atomic(ignore, GITIGNORE)
        return self.folder


@lru_cache(maxsize=None)
def workspace_of(root: Path) -> Workspace:
    """The one ``Workspace`` of the project in ``root`` (an invocation's is its ``evalrun.session.Session``'s)."""
    return Workspace(root)


def check_writable(path: Path, flag: str) -> Path:
    """``path`` (as given) if a file can be written there; else an ``OutputError`` naming the flag, the path and the fix.

    A file is written beside its target and renamed, so the check makes (and
    removes) a file in the folder it will be written in: permissions, a
    read-only or pseudo filesystem, all say so before any scorer starts.
    """
    given, path = path, Path(os.path.abspath(path))
    if path.is_dir():
        raise OutputError(f"{flag} {path}: is a directory; pass a file path, e.g. {path / 'out'}")
    if writes_in_place(path):  # /dev/stdout, /dev/null, a FIFO: written into, not replaced
        if not path.exists():
            raise OutputError(f"{flag} {path}: no such file to write into; choose a path outside /dev and /proc")
        if not os.access(path, os.W_OK):
            raise OutputError(f"{flag} {path}: not writable (permission denied); choose another path")
        return given
    real = Path(os.path.realpath(path))
    parent = real.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{flag} {path}: {parent} is not a directory; pass a path inside a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".evalrun-write-check-", dir=parent)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"{flag} {path}: cannot write in {parent} ({exc.strerror or exc}); choose a writable folder") from None
    if real.exists() and not os.access(real, os.W_OK):
        raise OutputError(f"{flag} {path}: the file is not writable (permission denied); choose another path")
    return given
