"""The results history: every run appended to SQLite (default) or PostgreSQL, and read back over time.

``record_run`` is the one call the run, merge and baseline commands make
after writing their results file (the store's default place and the folder's
``.gitignore`` are ``evalrun.workspace``'s). It never raises: a history that cannot be
written is a warning line, and never changes the verdict or the results file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from evalrun.workspace import workspace_of

if TYPE_CHECKING:
    from evalrun.history.location import HistoryLocation
    from evalrun.manifest import Manifest
    from evalrun.results import RunResults


def record_run(
    manifest: Manifest, results: RunResults, environ: Mapping[str, str], source: str = "run",
    *, secrets: Iterable[str] = (), locate: Callable[[], HistoryLocation | None] | None = None,
) -> str | None:
    """Append ``results`` to the history; return a warning line when it could not be, else None.

    ``environ`` says where the history is (``evalrun.history.location``); ``secrets`` are the run's
    (``evalrun.secrets.known_secrets``), scrubbed from every text stored; ``locate``: the session's
    ``Session.locate_history`` (the store located once an invocation), else located here.
    """
    from evalrun.errors import EvalrunError
    from evalrun.history.location import locate_history
    from evalrun.history.records import eval_records, make_record, read_git
    from evalrun.history.backends import use_store
    from evalrun.history.store import HistoryError

    workspace = workspace_of(manifest.root)
    try:
        workspace.ensure()
    except OSError as exc:
        return f"history: cannot create {workspace.folder}: {exc.strerror or exc}"
    try:
        location = locate() if locate is not None else locate_history(manifest, environ)
    except EvalrunError as exc:
        return f"history: not recorded: {exc}"
    if location is None:
        return None
    try:
        hidden = set(secrets)
        record = make_record(results, read_git(manifest.root), source, hidden, with_evals=False)
        # Streamed an eval at a time inside one transaction: memory stays flat, the run lands whole or not at all.
        use_store(location, lambda store: store.append(record, eval_records(results, hidden)))
    except HistoryError as exc:
        return f"history: not recorded: {exc}"
    except Exception as exc:  # noqa: BLE001 - the history must never change a run's outcome
        return f"history: not recorded: {location.shown}: {type(exc).__name__}"
    return None
