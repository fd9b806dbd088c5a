"""``secrets.scrub`` gives exactly the output of its former fragment-by-fragment search.

The former implementation (a ``str.find`` per 8-character fragment of every
key, on every string) is kept here as the reference; the single-pass matcher
must redact the very same characters: keys cut at every offset, runs that
overlap or touch (merged into one replacement), repeated fragments inside a
key, short keys found whole (overlapping), several keys sharing runs, and
evalrun's placeholder left alone. Explicit cases, then Hypothesis.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.secrets import FRAGMENT, PLACEHOLDER, REDACTED, scrub

KEY = "sk-live-Qm7xV2pLk9RtZ4wNc8YbH3jD6fGs1aUe5TiO0nWq"


def reference_scrub(text: str, secrets: Iterable[str], replacement: str = REDACTED) -> str:
    """evalrun.secrets.scrub before the single-pass matcher, verbatim in behaviour."""
    if not text:
        return text
    values = sorted({s for s in secrets if s}, key=len, reverse=True)
    pieces = {s if len(s) <= FRAGMENT else s[i : i + FRAGMENT] for s in values for i in range(max(1, len(s) - FRAGMENT + 1))}
    if not any(piece in text for piece in pieces):
        return text

    def occurrences(needle: str) -> list[int]:
        found, start = [], text.find(needle)
        while start != -1:
            found.append(start)
            start = text.find(needle, start + 1)
        return found

    spans: list[tuple[int, int]] = []
    for secret in values:
        if len(secret) <= FRAGMENT:
            spans += [(start, start + len(secret)) for start in occurrences(secret)]
            continue
        for offset in range(0, len(secret) - FRAGMENT + 1):
            gram = secret[offset : offset + FRAGMENT]
            start = text.find(gram)
            while start != -1:
                left, right, s_left, s_right = start, start + FRAGMENT, offset, offset + FRAGMENT
                while left > 0 and s_left > 0 and text[left - 1] == secret[s_left - 1]:
                    left, s_left = left - 1, s_left - 1
                while right < len(text) and s_right < len(secret) and text[right] == secret[s_right]:
                    right, s_right = right + 1, s_right + 1
                spans.append((left, right))
                start = text.find(gram, start + 1)
    kept = [(m, m + len(PLACEHOLDER)) for m in occurrences(PLACEHOLDER)]
    spans = [(a, b) for a, b in spans if not any(k0 <= a and b <= k1 for k0, k1 in kept)]
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, last = [], 0
    for start, end in merged:
        out += [text[last:start], replacement]
        last = end
    return "".join(out + [text[last:]])


def same(text: str, secrets: Iterable[str]) -> None:
    secrets = list(secrets)
    assert scrub(text, secrets) == reference_scrub(text, secrets), (text, secrets)


def test_a_key_cut_at_every_offset_is_redacted_as_before() -> None:
    for start in range(len(KEY)):
        for end in range(start, len(KEY) + 1):
            same(f"<{KEY[start:end]}>", {KEY})
            same(f"{KEY[start:end]}", {KEY})


def test_runs_that_overlap_touch_or_repeat_are_merged_as_before() -> None:
    cases = [
        KEY + KEY,  # touching
        KEY[:20] + KEY[12:],  # overlapping runs from two alignments
        KEY[:10] + KEY[:10] + KEY[5:30],
        KEY[30:] + KEY[:18],  # the key's end glued to its start
        "x" + KEY[3:11] + "y" + KEY[3:11],  # exactly FRAGMENT characters, twice
        KEY[::2] + KEY[:7],  # shares only runs shorter than FRAGMENT: untouched
    ]
    for text in cases:
        same(text, {KEY})


def test_a_key_with_repeated_fragments_is_redacted_as_before() -> None:
    key = "abcdefghabcdefghabcdefgh-XYZ"
    for text in ("abcdefghabcdefgh", "zzabcdefghabcdefgh-XYZzz", "abcdefgh-XY", "bcdefghabc" * 3):
        same(text, {key})


def test_short_keys_are_found_whole_and_overlapping_as_before() -> None:
    same("aaaaaaa", {"aaaa"})
    same("abcabcabc abcd", {"abca", "abcd", "bcabca"})
    same("12345678 1234567 123456789", {"12345678"})


def test_several_keys_sharing_runs_are_redacted_as_before() -> None:
    other = "sk-live-Qm7xV2pL" + "ZZZZZZZZZZZZZZZZ"
    same(f"{KEY[:16]}ZZZZ and {other[4:]} and {KEY[20:]}", {KEY, other, "ZZZZZZ"})


def test_the_placeholder_is_left_alone_as_before() -> None:
    key = "sk-test-evalrun-placeholder-0123456789"  # shares a long run with the placeholder
    same(f"{PLACEHOLDER} {key}", {key})
    same(f"{PLACEHOLDER}{key[-12:]}", {key})  # a run that starts inside the placeholder and leaves it
    same(f"x{PLACEHOLDER}x", {"evalrun-place", "holder"})


ALPHABET = "ab-xyz01"  # few letters: texts and keys share runs often
keys = st.lists(st.text(ALPHABET, min_size=4, max_size=24), min_size=1, max_size=4)


@settings(max_examples=400, deadline=None)
@given(keys=keys, data=st.data())
def test_any_text_made_of_key_pieces_is_redacted_as_before(keys: list[str], data: st.DataObject) -> None:
    pieces = st.one_of(
        st.text(ALPHABET, max_size=6),
        st.sampled_from(keys).flatmap(lambda k: st.tuples(st.just(k), st.integers(0, len(k)), st.integers(0, len(k))))
        .map(lambda t: t[0][min(t[1], t[2]) : max(t[1], t[2])]),
        st.just(PLACEHOLDER),
    )
    text = "".join(data.draw(st.lists(pieces, max_size=8)))
    same(text, keys)
    same(text, [*keys, text[:9]])  # a key the text holds whole


class _CountingText(str):
    """A string that counts the substring searches made on it."""

    searches = 0

    def __contains__(self, piece: object) -> bool:
        type(self).searches += 1
        return super().__contains__(piece)  # type: ignore[operator]

    def find(self, *args, **kwargs) -> int:  # type: ignore[no-untyped-def, override]
        type(self).searches += 1
        return super().find(*args, **kwargs)


def test_a_string_is_scanned_once_whatever_the_number_of_key_fragments() -> None:
    """The cost of scrubbing must not grow with the keys' fragments: one pass over the text, not one per fragment."""
    keys = {KEY, KEY.upper(), KEY[::-1]}  # 3 keys, 123 fragments
    _CountingText.searches = 0
    assert scrub(_CountingText("a harmless string of ordinary text " * 4), keys) == "a harmless string of ordinary text " * 4
    assert _CountingText.searches <= 1
