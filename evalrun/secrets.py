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
from dataclasses import dataclass
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
    One pass: a compiled pattern finds the few places where a fragment may show
    (``_Matcher``); a text with none is returned after that one scan.
    """
    if not text:
        return text
    matcher = _matcher(frozenset(s for s in secrets if s))
    if matcher is None or len(text) < matcher.shortest:  # a JSON key, a number: too short to hold anything
        return text
    spans = matcher.spans(text)
    if not spans:  # the common case: nothing to hide, found in one scan at C speed
        return text
    # evalrun's own placeholder is never a secret, whatever a key happens to share with it.
    kept = [(m, m + len(PLACEHOLDER)) for m in _occurrences(text, PLACEHOLDER)]
    spans = [(a, b) for a, b in spans if not any(k0 <= a and b <= k1 for k0, k1 in kept)]
    return _replace_spans(text, spans, replacement)  # no span left: the text as it was


def _occurrences(text: str, needle: str) -> list[int]:
    found, start = [], text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


class _Matcher:
    """Every place of a text where a secret, or a run of ``FRAGMENT`` of its characters, shows.

    One scan of the text (``runs``, a compiled pattern) finds its stretches of
    ``FRAGMENT`` or more characters that all occur in some key fragment: only
    inside them can a fragment show, and ordinary text has few. In a stretch,
    each window of ``FRAGMENT`` characters is looked up among the fragments
    (``grams``: which secret, at which offset); consecutive windows on one
    alignment of text and secret make one run, the span of its whole shared
    stretch, as the former search found by growing each fragment's match both
    ways. Secrets of ``FRAGMENT`` characters or fewer are found whole by one
    more pattern (``shorts``), overlapping occurrences included.
    """

    def __init__(self, secrets: frozenset[str]) -> None:
        self.shorts = sorted(s for s in secrets if len(s) <= FRAGMENT)
        self.short_pattern = re.compile(_trie_pattern(self.shorts)) if self.shorts else None
        self.grams: dict[str, list[tuple[int, int]]] = {}
        for number, secret in enumerate(sorted(s for s in secrets if len(s) > FRAGMENT)):
            for offset in range(len(secret) - FRAGMENT + 1):
                self.grams.setdefault(secret[offset : offset + FRAGMENT], []).append((number, offset))
        chars = "[" + "".join(re.escape(c) for c in sorted({c for gram in self.grams for c in gram})) + "]"
        self.runs = re.compile(f"(?<!{chars}){chars}{{{FRAGMENT},}}") if self.grams else None
        self.shortest = min([FRAGMENT, *map(len, self.shorts)])

    def spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        if self.runs is not None:
            grams = self.grams
            for stretch in self.runs.finditer(text):
                first, end = stretch.span()
                runs: dict[tuple[int, int], list[int]] = {}  # (secret, alignment) -> [first, last] window of a run
                for at in range(first, end - FRAGMENT + 1):
                    for number, offset in grams.get(text[at : at + FRAGMENT], ()):
                        run = runs.get((number, at - offset))
                        if run is not None and run[1] == at - 1:
                            run[1] = at
                            continue
                        if run is not None:
                            spans.append((run[0], run[1] + FRAGMENT))
                        runs[(number, at - offset)] = [at, at]
                spans += [(a, b + FRAGMENT) for a, b in runs.values()]
        if self.short_pattern is not None:
            found = self.short_pattern.search(text)
            while found is not None:
                at = found.start()
                spans += [(at, at + len(short)) for short in self.shorts if text.startswith(short, at)]
                found = self.short_pattern.search(text, at + 1)
        return spans


def _trie_pattern(words: list[str]) -> str:
    """A regular expression that matches where any of ``words`` starts (the shortest one suffices)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here

    def build(node: dict[str, Any]) -> str:
        if "" in node:
            return ""  # a word ends here: whatever follows, there is a match
        branches = [re.escape(char) + build(child) for char, child in sorted(node.items())]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    return build(trie)


@lru_cache(maxsize=64)
def _matcher(secrets: frozenset[str]) -> _Matcher | None:
    return _Matcher(secrets) if secrets else None


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


@dataclass(frozen=True)
class RunSecrets:
    """What one run must never show, worked out once from its environment (``known_secrets``)."""

    keys: frozenset[str]  # provider key values: kept out of fixtures and the model proxy's words
    values: frozenset[str]  # the keys and every secret-looking variable's value: scrubbed from all a run shows


def known_secrets(env: Mapping[str, str], extra_key_vars: Iterable[str] = ()) -> RunSecrets:
    """The one entry point: provider key values and secret-looking variables' values of ``env``, once per run.

    evalrun's own placeholder is none of them: an evalrun run by a t1 scorer sees it as its key.
    """
    keys = frozenset(key_values(env, extra_key_vars))
    return RunSecrets(keys=keys, values=keys | frozenset(secret_like_values(env)))


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
