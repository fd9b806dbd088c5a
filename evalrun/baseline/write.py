"""Writing a baseline file: the written form (``evalrun.baseline.format``), atomically.

A name TOML cannot hold (a lone surrogate, which can arrive through a JSON
report) is refused in one line naming the file and the fix; nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalrun.atomic import write_atomic
from evalrun.baseline.format import render_baseline
from evalrun.baseline.settings import GateSettings
from evalrun.errors import BaselineError, file_label


def write_baseline(
    path: Path, data: Mapping[str, Mapping[str, int]], command: str,
    settings: Mapping[str, GateSettings] | None = None,
    judges: Mapping[str, tuple[str, ...]] | None = None,
) -> None:
    """Write a baseline atomically, sorted so that a pull request's diff shows exactly what changed.

    ``settings`` (each eval's gate settings) are written first, as the ``["/settings"]`` table,
    then ``judges`` (who judged each eval's checks) as the ``["/judges"]`` table.
    """
    try:
        raw = render_baseline(data, command, settings, judges).encode("utf-8")
    except UnicodeEncodeError as exc:
        # Lone surrogates can arrive through JSON reports; TOML cannot hold them.
        bad = exc.object[max(0, exc.start - 20):exc.end + 20] if isinstance(exc.object, str) else ""
        raise BaselineError(
            f"{file_label(path)}: a check or eval name is not valid Unicode (near {bad!r}); "
            f"rename it in the scorer, then {command}"
        ) from None
    write_atomic(path, raw)
