"""Secrets: which values must never leave evalrun, and the one way to hide them in text.

Two kinds of secret are known:

- provider keys: the values of the model key variables (``KEY_VARS`` plus the
  manifest's ``[models] key_vars``), kept out of t1/t2 and never printed;
- secret-looking values: any variable whose name says KEY, TOKEN, SECRET,
  PASSWORD..., and passwords written into URLs and DSNs.

``scrub`` replaces known values; ``redact_passwords`` hides passwords in URLs
and ``key=value`` DSNs without knowing them. Every string that leaves evalrun is
scrubbed *before* it is cut (``evalrun.text``), so a cut never leaves part of a
secret behind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted by evalrun]"
PLACEHOLDER = "evalrun-placeholder-not-a-key"

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

# A value this short is no credential; redacting it would mangle every string
# that happens to contain it.
_MIN_SECRET_LENGTH = 4
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|PWD|CREDENTIAL|AUTH|COOKIE|PRIVATE", re.IGNORECASE)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*):(?P<pw>[^/?#\s]+)@")
_KV_SECRET = re.compile(
    r"(?<![A-Za-z0-9_])(?P<key>password|passwd|pass|pwd|sslpassword|token|secret|api_key|apikey|key)="
    r"(?P<pw>'(?:[^'\\]|\\.)*'|[^\s&]*)",
    re.IGNORECASE,
)


def key_vars(extra_key_vars: Iterable[str] = ()) -> tuple[str, ...]:
    """The key variable names: the common providers' plus the manifest's ``[models] key_vars``."""
    names = list(KEY_VARS)
    for name in extra_key_vars:
        if name and name not in names:
            names.append(name)
    return tuple(names)


def key_values(env: Mapping[str, str], extra_key_vars: Iterable[str] = ()) -> set[str]:
    """The values of the provider key variables set in ``env``: what must never be written or printed."""
    values: set[str] = set()
    for name in key_vars(extra_key_vars):
        value = env.get(name, "")
        if len(value) >= _MIN_SECRET_LENGTH and value != PLACEHOLDER:
            values.add(value)
    return values


def secret_like_values(env: Mapping[str, str]) -> list[str]:
    """Values of secret-looking variables (``*_KEY``, ``*TOKEN*``, ...), to scrub from every reason."""
    return [
        value
        for name, value in env.items()
        if _SECRET_NAME.search(name) and name not in ("PWD", "OLDPWD") and len(value) >= 6
    ]


def scrub(text: str, secrets: Iterable[str], replacement: str = REDACTED) -> str:
    """``text`` with every secret value replaced: the one place evalrun hides known secrets in text."""
    # Longest first: a secret that contains another must not be left half shown.
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, replacement)
    return text


def redact_passwords(text: str) -> str:
    """Hide passwords in URLs and DSNs: ``postgresql://u:***@h/db``, ``password=***``."""
    text = _URL_PASSWORD.sub(r"\g<head>:***@", text)
    return _KV_SECRET.sub(lambda m: f"{m.group('key')}=***" if m.group("pw") else m.group(0), text)


def passwords_in(target: Any) -> list[str]:
    """Passwords written into a target (URL or key=value DSN), to scrub from its reason."""
    words = target if isinstance(target, tuple) else (target,)
    found: list[str] = []
    for word in words:
        found += [m.group("pw") for m in _URL_PASSWORD.finditer(word)]
        found += [m.group("pw").strip("'") for m in _KV_SECRET.finditer(word)]
    # A very short password would scrub ordinary letters out of every message.
    return [pw for pw in found if len(pw) >= 4]
