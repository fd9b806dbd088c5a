"""What one run of a tier knows, worked out once at its start and handed down: tox's ``State``, for a tier.

A run's context is the invocation's ``evalrun.session.Session`` (evalrun's own
environment, read-only; the run's secrets, worked out once there by
``evalrun.secrets.known_secrets``), the manifest that runs (the session's, or a
clean copy's own under ``--clean-checkout`` and for each bite), the tier, the
tier's scrubbed environment (``evalrun.models.scorer_env``: no provider key in
t1/t2; worked out once, for probes, services and scorers alike) and the
``.evalrun/`` workspace of the manifest that runs. ``evalrun.run.pipeline`` builds
it once per run (``evalrun.bites`` once per bite, ``evalrun merge`` once for the
merged run) and it goes through every step, through judging and delivery to the
history and the HTML page; no step derives any of it again from the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from evalrun.manifest import Manifest
from evalrun.models.scorer_env import scrub_environment, with_pythonpath
from evalrun.secrets import RunSecrets
from evalrun.session import Session
from evalrun.workspace import Workspace, workspace_of

if TYPE_CHECKING:
    from evalrun.reports_out.terminal import Console


class RunContext(NamedTuple):
    session: Session
    manifest: Manifest  # the manifest that runs (a clean checkout's own, under --clean-checkout)
    tier: str
    scrubbed_env: Mapping[str, str]  # evalrun's environment under the tier's key rule, read-only
    shown: Manifest  # the manifest the user ran (the session's): named in hints, where the history is kept

    @staticmethod
    def build(session: Session, tier: str, manifest: Manifest | None = None) -> RunContext:
        """The context of a run of ``tier`` (of ``manifest``, default the session's): worked out here, once."""
        shown = session.manifest if manifest is None or session.manifest_path is not None else manifest
        manifest = shown if manifest is None else manifest
        scrubbed = scrub_environment(session.environ, tier, None, manifest.models.key_vars)
        return RunContext(session=session, manifest=manifest, tier=tier, scrubbed_env=MappingProxyType(scrubbed),
                          shown=shown)

    @property
    def console(self) -> Console:
        """The invocation's one printer (the session's)."""
        return self.session.console

    @property
    def environ(self) -> Mapping[str, str]:
        """evalrun's own environment, read-only (the session's copy)."""
        return self.session.environ

    @property
    def secrets(self) -> RunSecrets:
        """The session's secrets (with the key variables of a clean copy's manifest, should it name more)."""
        return self.session.secrets_for(self.manifest.models.key_vars)

    @property
    def workspace(self) -> Workspace:
        return workspace_of(self.manifest.root)

    @property
    def python_paths(self) -> list[Path]:
        return self.manifest.python_paths()

    def probe_env(self) -> dict[str, str]:
        """What the tier's probes see: the scorers' key rule, and the manifest's ``pythonpath`` (a ``python:``
        probe imports what a scorer would)."""
        return with_pythonpath(self.scrubbed_env, self.python_paths)
