"""What a probe is: the ``[probes.NAME]`` tables and inline shorthand, parsed and checked for sense.

This module owns the shape of a precondition — one kind (``env``, ``cmd``,
``file``, ``tcp``, ``http``, ``postgres``, ``python``, ``command``), its target,
a timeout — and every message about a malformed one. ``evalrun.manifest``
parses every probe while it loads the manifest, so a bad probe is a one-line
``ManifestError`` before anything runs; ``evalrun.probes.run`` checks them.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from evalrun.errors import ManifestError

KINDS = ("env", "cmd", "file", "tcp", "http", "postgres", "python", "command")
SERVICE_KINDS = ("tcp", "http", "postgres")  # probes of a running service: never in t1
DEFAULT_PROBE_TIMEOUT = 2.0
_TABLE_KEYS = ("timeout", "expect_json")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Probe:
    """One precondition, parsed but not expanded: ``${VAR}`` is resolved when it runs."""

    key: str  # the requirement as written ("db", "env:OPENAI_API_KEY"); the dedupe key
    name: str | None  # a named probe's name; None for inline shorthand
    kind: str  # one of KINDS
    target: Any  # str, or a tuple of argv words for ``command``
    timeout: float = DEFAULT_PROBE_TIMEOUT
    expect_json: dict[str, Any] | None = None




def parse_requirement(label: str, named: Mapping[str, Probe], requirement: str, where: str) -> Probe:
    """A ``requires`` entry as a Probe: a named ``[probes.NAME]`` or inline shorthand such as ``tcp:HOST:PORT``.

    ``where`` is the manifest place that uses it, for the one-line ``ManifestError``.
    """
    if requirement in named:
        return named[requirement]
    kind, sep, rest = requirement.partition(":")
    if not sep or not rest or kind not in KINDS:
        raise ManifestError(
            f"{label}: {where}: unknown probe {requirement!r}; define [probes.{requirement}] "
            f"or use one of {', '.join(k + ':' for k in KINDS)}"
        )
    place = f"{label}: {where}: {requirement!r}"
    target: Any = rest
    if kind in ("http", "postgres") and rest.startswith("//"):
        target = requirement  # written as a bare URL: "http://host/health", "postgres://host/db"
    elif kind == "http" and "://" not in rest and not rest.startswith("${"):
        target = "http://" + rest
    elif kind == "command":
        try:
            target = tuple(shlex.split(rest))
        except ValueError as exc:
            raise ManifestError(f"{place}: cannot split into words ({exc}); balance the quotes") from None
    _check_target(kind, target, place)
    return Probe(key=requirement, name=None, kind=kind, target=target)


def parse_probe_table(where: str, name: str, table: Mapping[str, Any]) -> Probe:
    """One ``[probes.NAME]`` table as a Probe; ``where`` is ``manifest.toml: probes.NAME``."""
    unknown = [k for k in table if k not in KINDS and k not in _TABLE_KEYS]
    if unknown:
        raise ManifestError(
            f"{where}.{unknown[0]}: unknown key; a probe has one kind key ({', '.join(KINDS)}), "
            f"an optional timeout and, for http, expect_json"
        )
    kinds = [k for k in table if k in KINDS]
    if not kinds:
        raise ManifestError(
            f'{where}: no probe kind; add exactly one of {", ".join(KINDS)}, e.g. postgres = "${{DATABASE_URL}}"'
        )
    if len(kinds) > 1:
        raise ManifestError(f"{where}: has {' and '.join(kinds)}; a probe checks one thing, split it into two probes")
    kind = kinds[0]
    timeout = table.get("timeout", DEFAULT_PROBE_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < math.inf:
        raise ManifestError(f"{where}.timeout: must be a number of seconds > 0, e.g. timeout = 2.5")
    expect = table.get("expect_json")
    if expect is not None:
        if kind != "http":
            raise ManifestError(f"{where}.expect_json: only http probes take expect_json; remove it")
        if not isinstance(expect, dict) or not expect:
            raise ManifestError(
                f"{where}.expect_json: must be a table of field = value, e.g. expect_json = {{ replayMode = true }}"
            )
    target = table[kind]
    if kind == "command":
        if not isinstance(target, list) or not target or not all(isinstance(w, str) and w for w in target):
            raise ManifestError(
                f'{where}.command: must be a non-empty array of argv words, e.g. command = ["pg_isready", "-q"]'
            )
        target = tuple(target)
    elif not isinstance(target, str) or not target:
        raise ManifestError(f"{where}.{kind}: must be a non-empty string")
    _check_target(kind, target, f"{where}.{kind}")
    return Probe(key=name, name=name, kind=kind, target=target, timeout=float(timeout), expect_json=expect)


def _check_target(kind: str, target: Any, place: str) -> None:
    """Reject targets that can never work; ones with ``${VAR}`` are checked after expansion."""
    if kind == "env" and not _ENV_NAME.match(target):
        raise ManifestError(f"{place}: {target!r} is not a variable name; write env:NAME, e.g. env:OPENAI_API_KEY")
    if kind == "command" and not target:
        raise ManifestError(f"{place}: no command; write command:PROGRAM ARGS")
    if _has_var(target):
        return
    if kind == "tcp":
        problem = split_host_port(target)[2]
        if problem:
            raise ManifestError(f"{place}: {problem}")
    elif kind == "http":
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ManifestError(f"{place}: not an http(s) URL; write e.g. http://127.0.0.1:8000/health")
    elif kind == "python" and not MODULE_NAME.match(target):
        raise ManifestError(f"{place}: {target!r} is not a module name; write e.g. python:yaml")


def _has_var(target: Any) -> bool:
    words = target if isinstance(target, tuple) else (target,)
    return any(_VAR.search(w) for w in words)


def split_host_port(target: str) -> tuple[str, int, str]:
    """``host:port`` or ``[v6]:port`` -> (host, port, problem); problem is "" when fine."""
    host, sep, port_text = target.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return "", 0, f"expected HOST:PORT with a port 1-65535, e.g. 127.0.0.1:5432, got {target!r}"
    return host, int(port_text), ""


class Unset(Exception):
    def __init__(self, var: str, state: str) -> None:
        super().__init__(var)
        self.var, self.state = var, state


def expand(target: Any, env: Mapping[str, str]) -> Any:
    """``target`` with ``${VAR}`` filled in from ``env``; ``Unset`` names a variable that is unset or empty."""
    if isinstance(target, tuple):
        return tuple(expand(word, env) for word in target)

    def substitute(match: re.Match[str]) -> str:
        var = match.group(1)
        if var not in env:
            raise Unset(var, "not set")
        if not env[var]:
            raise Unset(var, "empty")
        return env[var]

    return _VAR.sub(substitute, target)


class ProbeTable(BaseModel):
    """The published shape of a ``[probes.NAME]`` table (exactly one kind key), for the manifest schema."""

    model_config = ConfigDict(extra="forbid")

    env: str | None = Field(default=None, description="a variable that must be set and non-empty")
    cmd: str | None = Field(default=None, description="a program that must be on PATH")
    file: str | None = Field(default=None, description="a path, relative to the manifest, that must exist")
    tcp: str | None = Field(default=None, description="HOST:PORT that must accept a connection")
    http: str | None = Field(default=None, description="a URL that must answer 2xx")
    postgres: str | None = Field(default=None, description="a DSN that must answer select 1")
    python: str | None = Field(default=None, description="a module the scorers' python can import")
    command: list[str] | None = Field(default=None, description="argv that must exit 0")
    timeout: float = Field(default=DEFAULT_PROBE_TIMEOUT, gt=0, description="seconds")
    expect_json: dict[str, Any] | None = Field(default=None, description="http only: fields the JSON body must hold")


