"""What a service is: the ``[services.NAME]`` tables, validated, and every message about them.

``evalrun.manifest`` parses every service table while it loads the manifest,
so a bad one is a one-line ``ManifestError`` before anything starts;
``evalrun.services.manager`` starts and stops them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrun.errors import ManifestError
from evalrun.probes.spec import Probe, parse_requirement

DEFAULT_READY_TIMEOUT = 30.0
_RUN_KEYS = ("run", "dir", "ready", "ready_timeout", "env")
_POSTGRES_KEYS = ("postgres", "ready", "ready_timeout", "env", "url_var")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class ServiceSpec:
    """One validated ``[services.NAME]`` table. ``dir`` is absolute."""

    name: str
    run: tuple[str, ...] | None
    postgres: str | None
    ready: str | None
    ready_timeout: float
    env: Mapping[str, str]
    dir: Path
    url_var: str = "DATABASE_URL"

    def exports(self) -> set[str]:
        """The variable names this service exports to the evals that use it."""
        return set(self.env) | ({self.url_var} if self.postgres else set())


def parse_service_tables(
    label: str, root: Path, tables: Mapping[str, Any], probes: Mapping[str, Probe]
) -> dict[str, ServiceSpec]:
    """Validate every ``[services.NAME]`` table; ManifestError names the key and the fix."""
    return {name: _parse_one(label, root, probes, name, table) for name, table in tables.items()}


def check_exports(label: str, index: int, eval_name: str, services: list[str], specs: Mapping[str, ServiceSpec]) -> None:
    """Two services of one eval must not export the same variable: one would silently win."""
    owner: dict[str, str] = {}
    for service in services:
        for var in sorted(specs[service].exports()):
            if var in owner and owner[var] != service:
                raise ManifestError(
                    f'{label}: evals[{index}] ("{eval_name}").services: {owner[var]} and {service} both '
                    f"export {var}; rename it in one of them (env, or url_var for a postgres service)"
                )
            owner[var] = service


def _parse_one(label: str, root: Path, probes: Mapping[str, Probe], name: str, table: dict[str, Any]) -> ServiceSpec:
    where = f"{label}: services.{name}"

    def bad(key: str, problem: str) -> ManifestError:
        return ManifestError(f"{where}.{key}: {problem}" if key else f"{where}: {problem}")

    if not _NAME.match(name):
        raise bad("", "service names may use letters, digits, '_', '.', '-' and must start with a letter or digit")
    if ("run" in table) == ("postgres" in table):
        raise bad("", 'set exactly one of run = ["program", ...] or postgres = "embedded"')
    allowed = _RUN_KEYS if "run" in table else _POSTGRES_KEYS
    for key in table:
        if key not in allowed:
            raise bad(key, f"unknown key; a {'run' if 'run' in table else 'postgres'} service takes {', '.join(allowed)}")
    run: tuple[str, ...] | None = None
    postgres: str | None = None
    if "run" in table:
        value = table["run"]
        if not isinstance(value, list) or not value or not all(isinstance(w, str) and w for w in value):
            raise bad("run", 'must be a non-empty array of non-empty strings, e.g. ["python", "server.py"]')
        run = tuple(value)
    else:
        postgres = table["postgres"]
        if postgres != "embedded":
            raise bad("postgres", 'must be "embedded" (a throwaway local PostgreSQL)')
    folder = root
    if "dir" in table:
        if not isinstance(table["dir"], str) or not table["dir"]:
            raise bad("dir", "must be a non-empty string, a folder relative to the manifest")
        folder = (root / table["dir"]).resolve()
        if not folder.is_relative_to(root):
            raise bad("dir", f"{table['dir']!r} lies outside the manifest's folder; keep services under it")
        if not folder.is_dir():
            raise bad("dir", f"{table['dir']!r} does not exist; create it or fix the path")
    ready = table.get("ready")
    if ready is not None:
        if not isinstance(ready, str) or not ready:
            raise bad("ready", 'must be a probe, e.g. "tcp:127.0.0.1:8000" or the name of a [probes.NAME]')
        parse_requirement(label, probes, ready, f"services.{name}.ready")
    timeout = table.get("ready_timeout", DEFAULT_READY_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise bad("ready_timeout", "must be a number of seconds")
    if not timeout > 0:
        raise bad("ready_timeout", "must be > 0")
    env = table.get("env", {})
    if not isinstance(env, dict):
        raise bad("env", 'must be a table, e.g. env = { API_URL = "http://127.0.0.1:8000" }')
    for key, value in env.items():
        if not _VAR.match(key):
            raise bad(f"env.{key}", "not a valid variable name; use letters, digits and '_'")
        if not isinstance(value, str):
            raise bad(f"env.{key}", 'must be a string; quote it, e.g. PORT = "8000"')
    url_var = table.get("url_var", "DATABASE_URL")
    if not isinstance(url_var, str) or not _VAR.match(url_var):
        raise bad("url_var", "must be a variable name, e.g. DATABASE_URL")
    return ServiceSpec(name, run, postgres, ready, float(timeout), dict(env), folder, url_var)


class ServiceTable(BaseModel):
    """The published shape of a ``[services.NAME]`` table (``run`` or ``postgres``), for the manifest schema."""

    model_config = ConfigDict(extra="forbid")

    run: list[str] | None = Field(default=None, description="argv of a long-running process, in its own process group")
    postgres: str | None = Field(default=None, description='"embedded": a throwaway local PostgreSQL cluster')
    dir: str | None = Field(default=None, description="run services: the folder it runs in, relative to the manifest")
    ready: str | None = Field(default=None, description="a probe polled until it holds")
    ready_timeout: float = Field(default=DEFAULT_READY_TIMEOUT, gt=0, description="seconds")
    env: dict[str, str] = Field(default_factory=dict, description="exported to the evals that use the service")
    url_var: str = Field(default="DATABASE_URL", description="postgres services: the variable that holds the URL")
