"""Where a tier's baseline lives, and the guard that keeps a concurrent change from being overwritten.

``baselines/<tier>.toml`` (``[baseline] dir``), the lock held while it is read,
updated and written, the fingerprint of what a run read, and the command that
regenerates it, which every hint quotes.
"""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

from evalrun.atomic import write_atomic
from evalrun.errors import BaselineError, file_label
from evalrun.files import FileReadError, read_bounded
from evalrun.manifest import Manifest
from evalrun.workspace import workspace_of

BASELINE_LIMIT = 1024**3  # bytes read of a baseline: 1,000,000 checks take a twentieth of it


def baseline_path(manifest: Manifest, tier: str) -> Path:
    """Where the baseline of ``tier`` lives: ``<manifest root>/<baseline.dir>/<tier>.toml``."""
    return manifest.root / manifest.baseline.dir / f"{tier}.toml"


def baseline_lock(manifest: Manifest, path: Path) -> Path:
    """The lock held while a baseline is read, updated and written: kept out of the committed folder."""
    return workspace_of(manifest.root).lock(path.name)


def baseline_fingerprint(path: Path) -> str | None:
    """The sha256 of a baseline file's bytes; None when there is none (or it cannot be read: loading says why)."""
    try:
        return hashlib.sha256(read_bounded(path, BASELINE_LIMIT, "a baseline")).hexdigest()
    except FileReadError:
        return None


def _written_mark(manifest: Manifest, path: Path) -> Path:
    """Beside the lock: the fingerprint of the file the last ``baseline --update`` wrote."""
    return baseline_lock(manifest, path).with_suffix(".written")


def check_unchanged_since(manifest: Manifest, path: Path, snapshot: str | None, command: str) -> None:
    """Under the baseline's lock: BaselineError unless the file is as it was before the scorers ran.

    Another ``baseline --update`` that wrote it meanwhile is fine (its counts are
    merged, never lost); anything else that changed it — a scorer, an editor —
    would have its counts recorded as if this run decided them, so nothing is written.
    """
    now = baseline_fingerprint(path)
    if now == snapshot:
        return
    try:
        mark = _written_mark(manifest, path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        mark = None
    if now is not None and now == mark:
        return
    raise BaselineError(
        f"{file_label(path)}: changed while the evals ran, and not by evalrun baseline --update (a scorer or an "
        f"editor wrote it); nothing was written: look at the change, then {command}"
    )


def mark_written(manifest: Manifest, path: Path) -> None:
    """Record the fingerprint of the baseline just written, for ``check_unchanged_since`` in a concurrent update."""
    fingerprint = baseline_fingerprint(path)
    if fingerprint is not None:
        with contextlib.suppress(OSError):
            write_atomic(_written_mark(manifest, path), fingerprint + "\n")


def update_command(tier: str, manifest_path: Path | None = None) -> str:
    """The command that regenerates a tier's baseline, quoted in every hint (with ``--manifest`` when not the default)."""
    extra = ""
    if manifest_path is not None:
        default = Path("manifest.toml")
        if manifest_path != default and manifest_path.resolve() != default.resolve():
            extra = f" --manifest {manifest_path}"
    return f"evalrun baseline --update {tier}{extra}"
