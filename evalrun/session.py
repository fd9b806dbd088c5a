"""One invocation of evalrun: what every command of it shares, worked out once (tox's ``State``, for a process).

``evalrun.cli`` builds one ``Session`` where it parses the arguments and hands
it to the command. The session owns:

- ``environ``: a read-only copy of evalrun's environment, taken once by the
  entry point (no command reads ``os.environ``; only a few low-level defaults
  do: the scorer SDK's side, git's and ps's child environments);
- ``secrets``: the invocation's secrets (``evalrun.secrets.known_secrets``, the
  only call of it), with the manifest's ``[models] key_vars`` when there is a
  manifest; the console and the error boundary scrub with this same set;
- ``workspace``: the ``.evalrun/`` folder beside the manifest (``evalrun.workspace``);
- ``manifest``: the manifest, loaded once, when first asked for (a clean copy's
  own manifest, under ``--clean-checkout`` or ``bites``, is another one);
- ``console``: the one printer of the invocation;
- ``locate_history()``: where the history is (``evalrun.history.location``), located once.

A run of one tier adds its tier and scrubbed environment: ``evalrun.run.context.RunContext``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import IO, TYPE_CHECKING

from evalrun.secrets import RunSecrets, known_secrets
from evalrun.workspace import Workspace, workspace_of

if TYPE_CHECKING:  # the console and the manifest's modules are imported when first used
    from evalrun.history.location import HistoryLocation
    from evalrun.manifest import Manifest
    from evalrun.reports_out.terminal import Console


class Session:
    """One invocation's shared state; each part is worked out at most once."""

    def __init__(self, environ: Mapping[str, str], manifest_path: Path | None = None,
                 stream: IO[str] | None = None, console: Console | None = None) -> None:
        """``stream``: where the console writes (default stdout); ``console``: one made already (tests)."""
        self.environ: Mapping[str, str] = MappingProxyType(dict(environ))  # a copy: what the start read is kept
        self.manifest_path = manifest_path
        self._stream = stream
        self._secrets: dict[tuple[str, ...], RunSecrets] = {}
        self._key_vars: tuple[str, ...] = ()
        self._located: tuple[HistoryLocation | None, Exception | None] | None = None
        if console is not None:
            self.__dict__["console"] = console

    @cached_property
    def manifest(self) -> Manifest:
        """The manifest at ``manifest_path``, loaded on first use (a ManifestError, exit 2, when it is bad)."""
        from evalrun.manifest import load_manifest

        if self.manifest_path is None:
            raise ValueError("this command has no manifest")
        return load_manifest(self.manifest_path)

    @cached_property
    def secrets(self) -> RunSecrets:
        """The invocation's secrets: the environment's, and the values of the manifest's key variables.

        With no manifest, or one that does not load (its error is the command's to report), the
        environment's own: an error line can still never show a key.
        """
        from evalrun.errors import EvalrunError

        key_vars: list[str] = []
        if self.manifest_path is not None:
            try:
                key_vars = list(self.manifest.models.key_vars)
            except (EvalrunError, OSError, ValueError):
                pass
        self._key_vars = tuple(key_vars)
        return self._secrets_with(self._key_vars)

    def secrets_for(self, key_vars: Iterable[str]) -> RunSecrets:
        """The secrets of a run whose manifest names ``key_vars``: the session's own when it names no other
        (always, but for a clean copy whose committed manifest names a key variable the working tree does not)."""
        own = self.secrets
        extra = tuple(sorted(set(key_vars) - set(self._key_vars)))
        return own if not extra else self._secrets_with((*self._key_vars, *extra))

    def _secrets_with(self, key_vars: tuple[str, ...]) -> RunSecrets:
        if key_vars not in self._secrets:
            self._secrets[key_vars] = known_secrets(self.environ, key_vars)
        return self._secrets[key_vars]

    @cached_property
    def workspace(self) -> Workspace:
        """The ``.evalrun/`` folder beside the manifest."""
        return workspace_of(self.manifest.root)

    @cached_property
    def console(self) -> Console:
        from evalrun.reports_out.terminal import Console

        return Console(self._stream, env=self.environ, secrets=self.secrets.values)

    def locate_history(self) -> HistoryLocation | None:
        """Where the history is, located on the first call; None when ``[history] enabled = false``.

        A bad location (an empty ``EVALRUN_HISTORY_URL``, a bad URL) is remembered too: each asker gets
        the same one-line error and decides what it means for it (a run warns, ``evalrun history`` exits 2).
        """
        if self._located is None:
            from evalrun.errors import EvalrunError
            from evalrun.history.location import locate_history

            try:
                self._located = (locate_history(self.manifest, self.environ), None)
            except EvalrunError as exc:
                self._located = (None, exc)
        location, error = self._located
        if error is not None:
            raise error
        return location
