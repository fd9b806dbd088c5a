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
from functools import lru_cache
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
        if _SECRET_NAME.search(name) and name not in ("PWD", "OLDPWD") and len(value) >= 6 and value != PLACEHOLDER
    ]


# A run of this many characters of a secret is itself a secret: text cut before
# it reached us (a tail, a capped message) may hold only part of a key.
FRAGMENT = 8


def scrub(text: str, secrets: Iterable[str], replacement: str = REDACTED) -> str:
    """``text`` with every secret value, and every run of ``FRAGMENT`` or more of its characters, replaced.

    The one place evalrun hides known secrets in text. Fragments count because
    a cut (by a scorer, a pipe's tail, a capped field) may leave part of a key.
    """
    if not text:
        return text
    values, pieces = _prepared(frozenset(s for s in secrets if s))
    if not any(piece in text for piece in pieces):  # the common case: nothing to hide, found at C speed
        return text
    spans: list[tuple[int, int]] = []
    for secret in values:
        if len(secret) <= FRAGMENT:
            spans += [(start, start + len(secret)) for start in _occurrences(text, secret)]
            continue
        spans += _fragment_spans(text, secret)
    # evalrun's own placeholder is never a secret, whatever a key happens to share with it.
    kept = [(m, m + len(PLACEHOLDER)) for m in _occurrences(text, PLACEHOLDER)]
    spans = [(a, b) for a, b in spans if not any(k0 <= a and b <= k1 for k0, k1 in kept)]
    if not spans:
        return text
    return _replace_spans(text, spans, replacement)


def _occurrences(text: str, needle: str) -> list[int]:
    found, start = [], text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


@lru_cache(maxsize=64)
def _prepared(secrets: frozenset[str]) -> tuple[list[str], tuple[str, ...]]:
    """The secrets longest first, and every piece whose presence means something to hide:
    a short secret whole, a long one's every run of FRAGMENT characters."""
    values = sorted(secrets, key=len, reverse=True)
    pieces = {s if len(s) <= FRAGMENT else s[i : i + FRAGMENT] for s in values for i in range(max(1, len(s) - FRAGMENT + 1))}
    return values, tuple(pieces)


def _fragment_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that are runs of ``FRAGMENT`` or more consecutive characters of ``secret``."""
    spans: list[tuple[int, int]] = []
    for offset in range(0, len(secret) - FRAGMENT + 1):
        gram = secret[offset : offset + FRAGMENT]
        start = text.find(gram)
        while start != -1:
            # Grow the match both ways while text and secret agree.
            left, right = start, start + FRAGMENT
            s_left, s_right = offset, offset + FRAGMENT
            while left > 0 and s_left > 0 and text[left - 1] == secret[s_left - 1]:
                left, s_left = left - 1, s_left - 1
            while right < len(text) and s_right < len(secret) and text[right] == secret[s_right]:
                right, s_right = right + 1, s_right + 1
            spans.append((left, right))
            start = text.find(gram, start + 1)
    return spans


def _replace_spans(text: str, spans: list[tuple[int, int]], replacement: str) -> str:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, last = [], 0
    for start, end in merged:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out)


def run_secrets(env: Mapping[str, str], extra_key_vars: Iterable[str] = ()) -> set[str]:
    """Everything a run must never show: provider key values and secret-looking variables' values.

    evalrun's own placeholder is none of them: an evalrun run by a t1 scorer sees it as its key.
    """
    return key_values(env, extra_key_vars) | set(secret_like_values(env))


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
