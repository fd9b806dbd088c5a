"""Model keys kept out of the tiers that promise not to spend: the scorer's environment.

This module owns which environment variables are model provider keys and what
a scorer sees of them in each tier:

- t1 (static): every key variable is replaced by ``PLACEHOLDER`` (set even
  when evalrun's own environment lacks it, so an SDK constructor such as
  ``OpenAI()`` does not refuse to start), and every model base-URL variable
  points at ``T1_MODEL_URL``, port 4 on 127.0.0.1 where nothing answers. A
  t1 eval that tries a model fails fast with "connection refused" (port 9,
  the discard port used before, is on the Fetch standard's list of "bad ports":
  Node's ``fetch`` refused it before connecting, with an unhelpful message).
  Of Anthropic's two credential variables exactly one is set, so the SDK has
  nothing to warn about: ``ANTHROPIC_AUTH_TOKEN`` when evalrun's environment
  has only that one, else ``ANTHROPIC_API_KEY`` (``ANTHROPIC_AUTH_TOKEN`` removed).
- t2 (replay): keys replaced the same way; the base-URL variables point at the
  record/replay proxy (``model_url``), or at ``T1_MODEL_URL`` when the tier
  runs no proxy. A t2 eval cannot make a live call even on a machine that
  holds real keys: it has none, and its endpoint serves fixtures.
- t3 (live): keys kept; the base-URL variables point at the proxy when one
  runs (``model_url`` given), so calls are counted and budgeted.

The base-URL variables, for a base such as ``http://127.0.0.1:PORT/t/<run token>/e/<eval>``
(see ``endpoint_env``)::

    OPENAI_BASE_URL     = <base>/v1     (OpenAI SDKs, and OpenAI-compatible clients)
    OPENAI_API_BASE     = <base>/v1     (the older name still read by LangChain, LiteLLM)
    ANTHROPIC_BASE_URL  = <base>        (Anthropic SDKs append /v1/messages themselves)
    ANTHROPIC_API_URL   = <base>        (the name LangChain's Anthropic client reads too)
    EVALRUN_MODEL_URL   = <base>        (evalrun's own: append the provider's path)

In t1 and t2 ``127.0.0.1`` and ``localhost`` are added to ``NO_PROXY`` so a
machine-wide HTTP proxy cannot route the scorer's model calls elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from evalrun.secrets import PLACEHOLDER, key_vars


# Port 4 (unassigned, privileged): nothing listens there, so a connection is refused at once. Not the
# discard port 9: Node's fetch (and browsers) refuse the Fetch standard's "bad ports" before connecting.
T1_MODEL_URL = "http://127.0.0.1:4/evalrun-t1-has-no-model"


# Every base-URL variable an SDK reads (evalrun.models.upstreams.SDK_BASE_VARS) and evalrun's own: where an
# eval's proxy (or the placeholder) is, whatever the eval's ``env`` says (``model_endpoint_wins``).
BASE_URL_VARS: tuple[str, ...] = (
    "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL", "EVALRUN_MODEL_URL",
)

def endpoint_env(base_url: str) -> dict[str, str]:
    """The base-URL variables for a model endpoint at ``base_url`` (no trailing slash)."""
    base = base_url.rstrip("/")
    return {
        "OPENAI_BASE_URL": f"{base}/v1",
        "OPENAI_API_BASE": f"{base}/v1",
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_URL": base,
        "EVALRUN_MODEL_URL": base,
    }


def model_endpoint_wins(env: dict[str, str], proxy_env: Mapping[str, str]) -> None:
    """Put the eval's proxy endpoint (``proxy_env``, empty when no proxy serves it) back over what its ``env``
    set: an eval's own ``OPENAI_BASE_URL`` is its *upstream* (evalrun.models.upstreams), never a way around
    the proxy. An eval no proxy serves (t1, t2 and t3 without ``model = true``) keeps its ``env``: a mock
    server of its own is its business, and in t1/t2 it has no key to spend."""
    for name in BASE_URL_VARS:
        if name in proxy_env:
            env[name] = proxy_env[name]


def scrub_environment(
    env: Mapping[str, str],
    tier: str,
    model_url: str | None,
    extra_key_vars: Iterable[str] = (),
) -> dict[str, str]:
    """The environment a scorer of ``tier`` gets, built from evalrun's own ``env``.

    ``model_url`` is the proxy's base URL for this eval, or None when no proxy runs.
    """
    if tier not in ("t1", "t2", "t3"):
        raise ValueError(f"unknown tier {tier!r}; use t1, t2 or t3")
    scrubbed = dict(env)
    if tier == "t3":
        if model_url is not None:
            scrubbed.update(endpoint_env(model_url))
        return scrubbed
    for name in key_vars(extra_key_vars):
        scrubbed[name] = PLACEHOLDER
    # One Anthropic credential, as the SDK wants (it warns when both are set and uses the API key).
    if env.get("ANTHROPIC_AUTH_TOKEN") and not env.get("ANTHROPIC_API_KEY"):
        del scrubbed["ANTHROPIC_API_KEY"]
    else:
        del scrubbed["ANTHROPIC_AUTH_TOKEN"]
    target = model_url if tier == "t2" and model_url is not None else T1_MODEL_URL
    scrubbed.update(endpoint_env(target))
    _bypass_http_proxy(scrubbed)
    return scrubbed


def _bypass_http_proxy(env: dict[str, str]) -> None:
    # httpx, requests and urllib route 127.0.0.1 through HTTP(S)_PROXY unless
    # NO_PROXY says otherwise; a corporate proxy must not receive model calls.
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h for h in env.get(name, "").split(",") if h.strip()]
        for host in ("127.0.0.1", "localhost"):
            if host not in hosts:
                hosts.append(host)
        env[name] = ",".join(hosts)


def with_pythonpath(env: Mapping[str, str], folders: list[Path]) -> dict[str, str]:
    """``env`` with ``folders`` in front of its PYTHONPATH (the manifest's ``pythonpath``), the rest kept after them."""
    out = dict(env)
    if folders:
        out["PYTHONPATH"] = os.pathsep.join([*map(str, folders), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    return out
