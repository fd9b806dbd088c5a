"""Where each provider's calls go in record and live modes, and where that came from: the one place that decides.

The proxy relays a call to the upstream of the call's API style (``openai`` or
``anthropic``, ``evalrun.models.replay.upstream.api_style``). Per provider, the
first of these that is set wins:

1. ``EVALRUN_UPSTREAM_OPENAI`` / ``EVALRUN_UPSTREAM_ANTHROPIC`` in evalrun's environment;
2. ``[models] upstream = { openai = "...", anthropic = "..." }`` in the manifest;
3. ``EVALRUN_UPSTREAM`` (every provider);
4. ``[models] upstream = "..."`` (every provider);
5. the SDK's own base-URL variable in the eval's ``env`` (its experiment's over it):
   ``OPENAI_BASE_URL`` or ``OPENAI_API_BASE``; ``ANTHROPIC_BASE_URL`` or ``ANTHROPIC_API_URL``;
6. the same variables in evalrun's environment (the user's shell, the CI job);
7. the provider's API: https://api.openai.com, https://api.anthropic.com.

So a project whose code points the SDK at its own gateway keeps that gateway as
its upstream, and the scorer itself always talks to the proxy (its base-URL
variables are the proxy's, whatever its ``env`` says): calls are counted,
budgeted, recorded and replayed. An upstream is a base URL (``http://host:port``
or ``http://host:port/v1``, a path prefix allowed); a full endpoint
(``.../v1/chat/completions``) is refused with one line, as is anything that is
not an http(s) URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

PROVIDERS: tuple[str, ...] = ("openai", "anthropic")
DEFAULT_UPSTREAMS = {"openai": "https://api.openai.com", "anthropic": "https://api.anthropic.com"}
UPSTREAM_VAR = "EVALRUN_UPSTREAM"  # every provider; EVALRUN_UPSTREAM_<PROVIDER> for one
# The base-URL variables each provider's SDKs (and LangChain, LiteLLM) read, first wins.
SDK_BASE_VARS: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL"),
}
# API paths an upstream must not end with: the SDK appends them to the base URL itself.
_ENDPOINTS = ("/chat/completions", "/completions", "/messages", "/responses", "/embeddings")


@dataclass(frozen=True)
class Upstream:
    """One provider's upstream: its base URL and where it was set (shown in the run's header)."""

    url: str
    source: str


def upstream_problem(url: str) -> str | None:
    """Why ``url`` cannot be an upstream (``http://host:port`` or ``http://host:port/v1``), or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is no number or out of range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        return 'must be a base URL such as "https://api.openai.com" or "http://127.0.0.1:8765/v1"'
    if parts.query or parts.fragment:
        return "must have no query or fragment; give the base URL the API paths follow"
    path = parts.path.rstrip("/")
    for endpoint in _ENDPOINTS:
        if path.endswith(endpoint):
            base = url[: url.rindex(endpoint)]
            return (f"is an endpoint, not a base URL (the SDK adds {endpoint} itself, so it would be doubled); "
                    f'use "{base}"')
    return None


class UpstreamProblem(ValueError):
    """An upstream setting that cannot be used: one line naming where it was set and the fix."""


def run_upstreams(models_upstream: str | Mapping[str, str] | None, environ: Mapping[str, str]) -> dict[str, Upstream]:
    """Each provider's upstream for the run (before any eval's ``env`` is looked at)."""
    unknown = sorted(
        name for name in environ
        if name.startswith(UPSTREAM_VAR + "_") and name[len(UPSTREAM_VAR) + 1:].lower() not in PROVIDERS
        and environ[name]
    )
    if unknown:
        known = " or ".join(f"{UPSTREAM_VAR}_{p.upper()}" for p in PROVIDERS)
        raise UpstreamProblem(f"{unknown[0]}: no such provider; use {known} (or {UPSTREAM_VAR} for every provider)")
    table = models_upstream if isinstance(models_upstream, Mapping) else {}
    every = models_upstream if isinstance(models_upstream, str) else None
    out: dict[str, Upstream] = {}
    for provider in PROVIDERS:
        own_var = f"{UPSTREAM_VAR}_{provider.upper()}"
        candidates = [
            (environ.get(own_var), own_var),
            (table.get(provider), f"[models] upstream.{provider}"),
            (environ.get(UPSTREAM_VAR), UPSTREAM_VAR),
            (every, "[models] upstream"),
        ]
        candidates += [(environ.get(var), f"{var} in evalrun's environment") for var in SDK_BASE_VARS[provider]]
        out[provider] = _first(candidates) or Upstream(DEFAULT_UPSTREAMS[provider], "the provider's API")
    return out


def eval_upstreams(run: Mapping[str, Upstream], eval_env: Mapping[str, str], label: str) -> dict[str, Upstream]:
    """``run``'s upstreams with those the eval's ``env`` sets (``label``: how to name the eval, e.g.
    ``evals[2] ("chat")``) in place of any that came from evalrun's environment or the default."""
    out = dict(run)
    for provider in PROVIDERS:
        if run[provider].source.startswith((UPSTREAM_VAR, "[models]")):
            continue  # the manifest or the run named an upstream: it wins over the SDK's variables
        found = _first([(eval_env.get(var), f"{label}.env.{var}") for var in SDK_BASE_VARS[provider]])
        if found is not None:
            out[provider] = found
    return out


def _first(candidates: list[tuple[str | None, str]]) -> Upstream | None:
    for value, source in candidates:
        if value:
            problem = upstream_problem(value)
            if problem:  # NAME='value' (where): the fix
                name, _, where = source.partition(" in ")
                raise UpstreamProblem(f"{name}={value!r}{f' (in {where})' if where else ''}: {problem}")
            return Upstream(value.rstrip("/"), source)
    return None


