"""Model keys kept out of the tiers that promise not to spend: the scorer's environment.

This module owns which environment variables are model provider keys and what
a scorer sees of them in each tier:

- t1 (static): every key variable is replaced by ``PLACEHOLDER`` (set even
  when evalrun's own environment lacks it, so an SDK constructor such as
  ``OpenAI()`` does not refuse to start), and every model base-URL variable
  points at ``T1_MODEL_URL``, the discard port on 127.0.0.1 where nothing
  answers. A t1 eval that tries a model fails fast with "connection refused".
- t2 (replay): keys replaced the same way; the base-URL variables point at the
  record/replay proxy (``model_url``), or at ``T1_MODEL_URL`` when the tier
  runs no proxy. A t2 eval cannot make a live call even on a machine that
  holds real keys: it has none, and its endpoint serves fixtures.
- t3 (live): keys kept; the base-URL variables point at the proxy when one
  runs (``model_url`` given), so calls are counted and budgeted.

The base-URL variables, for a base such as ``http://127.0.0.1:PORT/e/<eval>``
(see ``endpoint_env``)::

    OPENAI_BASE_URL     = <base>/v1     (OpenAI SDKs, and OpenAI-compatible clients)
    OPENAI_API_BASE     = <base>/v1     (the older name still read by LangChain, LiteLLM)
    ANTHROPIC_BASE_URL  = <base>        (Anthropic SDKs append /v1/messages themselves)
    EVALRUN_MODEL_URL   = <base>        (evalrun's own: append the provider's path)

In t1 and t2 ``127.0.0.1`` and ``localhost`` are added to ``NO_PROXY`` so a
machine-wide HTTP proxy cannot route the scorer's model calls elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

PLACEHOLDER = "evalrun-placeholder-not-a-key"

# The discard port (9): nothing listens there, so a connection is refused at once.
T1_MODEL_URL = "http://127.0.0.1:9/evalrun-t1-has-no-model"

KEY_VARS: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "CO_API_KEY",
    "GROQ_API_KEY",
    "TOGETHER_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY",
    "PPLX_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HUGGINGFACEHUB_API_TOKEN",
    "REPLICATE_API_TOKEN",
    "VOYAGE_API_KEY",
    "AI21_API_KEY",
    "CEREBRAS_API_KEY",
    "NVIDIA_API_KEY",
    "ANYSCALE_API_KEY",
    "LITELLM_API_KEY",
)

BASE_URL_VARS: tuple[str, ...] = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "EVALRUN_MODEL_URL")

# A value this short is no credential; redacting it would mangle every string
# that happens to contain it.
_MIN_SECRET_LENGTH = 4


def endpoint_env(base_url: str) -> dict[str, str]:
    """The base-URL variables for a model endpoint at ``base_url`` (no trailing slash)."""
    base = base_url.rstrip("/")
    return {
        "OPENAI_BASE_URL": f"{base}/v1",
        "OPENAI_API_BASE": f"{base}/v1",
        "ANTHROPIC_BASE_URL": base,
        "EVALRUN_MODEL_URL": base,
    }


def key_vars(extra_key_vars: Iterable[str] = ()) -> tuple[str, ...]:
    """The key variable names: the common providers' plus the manifest's ``[models] key_vars``."""
    names = list(KEY_VARS)
    for name in extra_key_vars:
        if name and name not in names:
            names.append(name)
    return tuple(names)


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
    target = model_url if tier == "t2" and model_url is not None else T1_MODEL_URL
    scrubbed.update(endpoint_env(target))
    _bypass_http_proxy(scrubbed)
    return scrubbed


REDACTED = "[redacted by evalrun]"


def scrub(text: str, secrets: Iterable[str], replacement: str = REDACTED) -> str:
    """``text`` with every secret value replaced: the one place evalrun hides secrets in text."""
    # Longest first: a secret that contains another must not be left half shown.
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, replacement)
    return text


def secret_values(env: Mapping[str, str], extra_key_vars: Iterable[str] = ()) -> set[str]:
    """The values of the key variables set in ``env``: what must never be written or printed."""
    values: set[str] = set()
    for name in key_vars(extra_key_vars):
        value = env.get(name, "")
        if len(value) >= _MIN_SECRET_LENGTH and value != PLACEHOLDER:
            values.add(value)
    return values


def _bypass_http_proxy(env: dict[str, str]) -> None:
    # httpx, requests and urllib route 127.0.0.1 through HTTP(S)_PROXY unless
    # NO_PROXY says otherwise; a corporate proxy must not receive model calls.
    for name in ("NO_PROXY", "no_proxy"):
        hosts = [h for h in env.get(name, "").split(",") if h.strip()]
        for host in ("127.0.0.1", "localhost"):
            if host not in hosts:
                hosts.append(host)
        env[name] = ",".join(hosts)
