"""Where the history lives: the manifest's ``[history]``, ``EVALRUN_HISTORY_URL``, or the default SQLite file.

This module owns choosing the backend from a URL, ``${VAR}`` expansion in the
manifest's URL, and redaction: a URL is only ever shown with its password
replaced, and the password is also scrubbed from any error text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit
from typing import NamedTuple

from evalrun.errors import ManifestError, UsageError, file_label
from evalrun.manifest import Manifest
from evalrun.workspace import HISTORY_FILE, workspace_of

ENV_VAR = "EVALRUN_HISTORY_URL"
TIMEOUT_VAR = "EVALRUN_HISTORY_TIMEOUT"
DEFAULT_TIMEOUT = 60.0  # seconds: the most the history may add to a run (connect, locks, statements, all of it)
DEFAULT_FILE = HISTORY_FILE  # shown relative to the manifest's folder
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HIDDEN = "***"


class HistoryLocation(NamedTuple):
    kind: str  # "sqlite" or "postgres"
    target: str  # a file path, or the full PostgreSQL URL (secret: never print it)
    shown: str  # for messages: the path, or the URL with its password replaced
    secrets: tuple[str, ...] = ()  # text to scrub from errors (the password)
    timeout: float = DEFAULT_TIMEOUT  # seconds: the whole history step (open, write or read, close) within it

    @property
    def wait(self) -> float:
        """Seconds for any one wait (connect, a lock, a statement): half the whole, so the store says what it waited for."""
        return self.timeout / 2


def locate_history(manifest: Manifest, environ: Mapping[str, str]) -> HistoryLocation | None:
    """The store to use, or None when ``[history] enabled = false``.

    ManifestError on a bad URL; UsageError when ``EVALRUN_HISTORY_URL`` is set
    but empty (a CI secret that is not set): that is never a silent fallback to
    a throwaway file on the runner.
    """
    if not manifest.history.enabled:
        return None
    timeout = history_timeout(environ)
    url = environ.get(ENV_VAR)
    origin = ENV_VAR
    if url is not None and not url.strip():
        raise UsageError(
            f"{ENV_VAR} is set but empty (a CI secret that is not set?); set it to postgresql://... or "
            f"sqlite:PATH, or unset it to use {DEFAULT_FILE}"
        )
    if url is None and manifest.history.url is not None:
        origin = f"{file_label(manifest.path)}: history.url"
        url = _expand(manifest.history.url, environ, origin)
    if url is None:
        path = workspace_of(manifest.root).history
        return HistoryLocation("sqlite", str(path), str(path), timeout=timeout)
    return parse_history_url(url, manifest.root, origin)._replace(timeout=timeout)


def history_timeout(environ: Mapping[str, str]) -> float:
    """``EVALRUN_HISTORY_TIMEOUT`` in seconds (default 60); UsageError when it is not a positive number."""
    raw = environ.get(TIMEOUT_VAR)
    if raw is None or not raw.strip():
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > 86_400:
        raise UsageError(f"{TIMEOUT_VAR}: {raw[:40]!r} is not a number of seconds between 0 and 86400; e.g. 60")
    return value


def parse_history_url(url: str, root: Path, origin: str) -> HistoryLocation:
    if url.startswith(("postgresql://", "postgres://")):
        password = _password(url)
        secrets = (password, unquote(password)) if password else ()
        return HistoryLocation("postgres", url, redact_url(url), secrets)
    if url.startswith("sqlite:"):
        rest = url.removeprefix("sqlite:")
        rest = rest[2:] if rest.startswith("//") else rest  # sqlite:///abs and sqlite:relative
        if not rest:
            raise ManifestError(f"{origin}: sqlite: needs a file, e.g. sqlite:{HISTORY_FILE.as_posix()}")
        path = Path(rest) if Path(rest).is_absolute() else root / rest
        return HistoryLocation("sqlite", str(path), str(path))
    raise ManifestError(
        f"{origin}: {redact_url(url)!r} is not a history URL; use postgresql://... or sqlite:PATH"
    )


def redact_url(url: str) -> str:
    """The URL with any password (in the authority or a ``password=`` parameter) replaced by ***."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a URL that cannot be parsed)"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _secret = userinfo.partition(":")
        netloc = f"{user}{':' + _HIDDEN if sep else ''}@{hostport}"
    query = parts.query
    if query:
        pairs = [(k, _HIDDEN if k.lower() == "password" else v) for k, v in parse_qsl(query, keep_blank_values=True)]
        query = urlencode(pairs, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _password(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        found = [v for k, v in parse_qsl(parts.query) if k.lower() == "password"]
        raw_userinfo = parts.netloc.rpartition("@")[0]
    except ValueError:
        return None
    raw = raw_userinfo.partition(":")[2] if ":" in raw_userinfo else None
    return parts.password or raw or (found[0] if found else None)


def _expand(value: str, environ: Mapping[str, str], origin: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if not environ.get(name):
            raise ManifestError(f"{origin}: uses ${{{name}}}, which is not set; export it or set {ENV_VAR}")
        return environ[name]

    return _REF.sub(one, value)
