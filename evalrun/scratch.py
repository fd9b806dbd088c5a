"""Scratch folders: one temporary folder per worker of a run, an empty workdir per eval in it.

This module owns every scratch folder evalrun makes for scorers: each worker's
folder (``make_scratch``), named after its owner and locked while it lives, so
that ``sweep_scratch`` removes only what a dead (SIGKILLed) run left and never a
live run's, with or without ``/proc``; each
worker's ``Scratch`` (the report path and a workdir that is empty for every
eval); and the janitor thread that removes filled workdirs off the workers'
critical path.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from evalrun.owners import Liveness, lock_new_file, lock_state, pid_state, release
from evalrun.procfs import start_ticks

# A run's scratch folder: ``evalrun-<owner pid>-<owner start ticks>-<random>``, holding SCRATCH_MARKER.
SCRATCH_MARKER = ".evalrun-scratch"
_SCRATCH_NAME = re.compile(r"evalrun-(\d+)-(\d+)-[^/]+\Z")


def make_scratch() -> Path:
    """A new scratch folder for this run, named after its owner so ``sweep_scratch`` knows when it is stale.

    Its marker file is locked while the run lives (``evalrun.owners``): from the moment it appears, another
    run's sweep finds it locked. ``drop_scratch`` removes the folder and lets the lock go.
    """
    me = os.getpid()
    folder = Path(tempfile.mkdtemp(prefix=f"evalrun-{me}-{start_ticks(me) or 0}-"))
    fd = lock_new_file(folder / SCRATCH_MARKER, f"{me}\n{LOCKED}\n".encode())
    if fd is None:  # a filesystem without locks: the sweep falls back on the owner's pid
        (folder / SCRATCH_MARKER).write_text(f"{me}\n")
    _marker_locks[folder] = fd
    return folder


def drop_scratch(folder: Path) -> None:
    """Remove a run's scratch folder, then release the lock that marked it as live."""
    shutil.rmtree(folder, ignore_errors=True)
    release(_marker_locks.pop(folder, None))


_marker_locks: dict[Path, int | None] = {}
LOCKED = "locked"  # the marker's second line when its run holds it locked (an older evalrun's never is)


def _says_locked(marker: Path) -> bool:
    try:
        with open(marker, "rb", buffering=0) as fh:  # a plain file: the caller checked
            return fh.read(64).split(b"\n")[1:2] == [LOCKED.encode()]
    except OSError:
        return False


def sweep_scratch(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders of evalrun processes that are gone (SIGKILLed); returns those removed.

    Only folders that carry SCRATCH_MARKER, belong to this user and whose owner is known to be dead are
    touched: its marker's lock is free (``evalrun.owners``), or, where a marker has no lock, its pid is
    gone (``/proc``'s start time, or no process at all under that pid). A live run's scratch, one whose
    owner cannot be told, or anything else in the temporary folder, never is.
    """
    root = Path(root or tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _SCRATCH_NAME.match(entry.name)
        if match is None:
            continue
        folder = Path(entry.path)
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if not (folder / SCRATCH_MARKER).is_file():
                continue
        except OSError:
            continue
        state = lock_state(folder / SCRATCH_MARKER) if _says_locked(folder / SCRATCH_MARKER) else Liveness.UNKNOWN
        if state is Liveness.UNKNOWN:
            state = pid_state(int(match.group(1)), int(match.group(2)))
        if state is not Liveness.DEAD:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not folder.exists():
            removed.append(folder)
    return removed


class Janitor:
    """Removes workdirs that scorers filled, off the workers' critical path."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Path | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def remove(self, path: Path) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="evalrun-janitor", daemon=True)
            self._thread.start()
        self._queue.put(path)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()

    def _work(self) -> None:
        while (path := self._queue.get()) is not None:
            shutil.rmtree(path, ignore_errors=True)


class Scratch:
    """One worker's scratch folder (``root/eval/``): the report path and a workdir that is empty for every eval.

    Making and removing two folders per eval costs more than the rest of the
    bookkeeping on a slow filesystem, so a worker keeps its folder: the report
    is deleted before each eval, and a workdir that a scorer left non-empty (or
    removed) is moved aside for the janitor and replaced by a new, empty one.
    """

    def __init__(self, root: Path, janitor: Janitor | None = None) -> None:
        self.root = root
        # The eval's files sit one folder below the worker's own: ``$EVALRUN_WORKDIR/../..`` is this
        # worker's folder, so a scorer that removes it removes nothing of another worker's eval.
        self.eval = root / "eval"
        self.eval.mkdir(parents=True, exist_ok=True)
        self.work = self.eval / "work"
        self.report = self.eval / "report.json"
        self.stdout = self.eval / "stdout"
        self._janitor = janitor
        self._used = 0

    def fresh(self) -> tuple[Path, Path]:
        """An empty workdir and a report path that does not exist yet.

        The last scorer may have removed this folder (or the whole scratch
        folder), replaced it with a file or a symlink, or left a directory at
        the report path: whatever it did, the next eval gets a clean start.
        """
        self._restore_root()
        for leftover in (self.report, self.stdout):
            try:
                os.unlink(leftover)  # a file or a link, or nothing: the usual case, one call
            except FileNotFoundError:
                pass
            except OSError:  # a folder (EISDIR; EPERM on macOS), or what the scorer made of it
                self._discard(leftover)
        try:
            # lstat: a symlink put in the workdir's place is never handed to the next scorer.
            clean = stat.S_ISDIR(os.lstat(self.work).st_mode) and not os.listdir(self.work) and self._used > 0
        except OSError:  # not made yet, removed or made unreadable by a scorer
            clean = False
        if not clean:
            self._used += 1
            self._discard(self.work)
            self.work.mkdir()
        return self.work, self.report

    def _discard(self, path: Path) -> None:
        """Clear ``path``: a file or link is unlinked, a folder moved aside for the janitor.

        Moving into a new, empty folder of our own cannot fail on whatever the
        scorer left (a non-empty ``used-N``, unreadable subfolders), where
        removing in place could.
        """
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(mode):
            path.unlink(missing_ok=True)
            return
        aside = Path(tempfile.mkdtemp(prefix="used-", dir=self.root))
        os.rename(path, aside / path.name)
        if self._janitor is not None:
            self._janitor.remove(aside)
        else:
            shutil.rmtree(aside, ignore_errors=True)

    def _restore_root(self) -> None:
        for folder in (self.root, self.eval):
            try:
                if stat.S_ISDIR(os.lstat(folder).st_mode):
                    continue
                folder.unlink()  # a file or symlink put in its place: never followed
            except FileNotFoundError:
                pass
            folder.mkdir(parents=True, exist_ok=True)
