"""What one run knows, worked out once at its start and handed down: tox's ``State``, for a tier.

A run's context holds the manifest, the tier, evalrun's own environment, the
run's secrets (``evalrun.secrets.known_secrets``: the one place they are
worked out), the tier's scrubbed environment (``evalrun.models.scorer_env``:
no provider key in t1/t2; worked out once, for probes, services and scorers
alike) and the ``.evalrun/`` workspace. ``evalrun.pipeline`` builds it once
and gives each stage the parts it uses; no stage derives any of them again
from the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from evalrun.manifest import Manifest
from evalrun.models.scorer_env import scrub_environment, with_pythonpath
from evalrun.secrets import RunSecrets, known_secrets
from evalrun.workspace import Workspace


@dataclass(frozen=True)
class RunContext:
    manifest: Manifest  # the manifest that runs (a clean checkout's own, under --clean-checkout)
    tier: str
    environ: Mapping[str, str]  # evalrun's own environment, read-only
    secrets: RunSecrets
    scrubbed_env: Mapping[str, str]  # evalrun's environment under the tier's key rule, read-only
    workspace: Workspace

    @staticmethod
    def build(manifest: Manifest, tier: str, environ: Mapping[str, str]) -> RunContext:
        """The context of a run of ``tier``: every derived part computed here, once."""
        key_vars = manifest.models.key_vars
        secrets = known_secrets(environ, key_vars)
        scrubbed = scrub_environment(environ, tier, None, key_vars)
        return RunContext(
            manifest=manifest,
            tier=tier,
            environ=MappingProxyType(dict(environ)),  # a copy: what the run read is what it keeps
            secrets=secrets,
            scrubbed_env=MappingProxyType(scrubbed),
            workspace=Workspace(manifest.root),
        )

    @property
    def python_paths(self) -> list[Path]:
        return self.manifest.python_paths()

    def probe_env(self) -> dict[str, str]:
        """What the tier's probes see: the scorers' key rule, and the manifest's ``pythonpath`` (a ``python:``
        probe imports what a scorer would)."""
        return with_pythonpath(self.scrubbed_env, self.python_paths)
