"""evalrun.secrets to the character: what is a secret, and exactly what a redacted string reads.

``tests/test_secrets_matcher.py`` holds ``scrub`` equal to its former
implementation; these tests say the expected text outright, so a change to the
span arithmetic (where a run starts and ends, which runs merge) or to what
counts as a secret (which variables, which URL and ``key=value`` passwords)
fails here whatever the reference does. Each test kills changes that the
mutation run (``bench/mutate.py``, see CONTRIBUTING.md) found alive.
"""

from __future__ import annotations

import pytest

from evalrun.secrets import (
    FRAGMENT,
    KEY_VARS,
    PLACEHOLDER,
    REDACTED,
    key_values,
    known_secrets,
    key_vars,
    passwords_in,
    redact_passwords,
    scrub,
    secret_like_values,
)

KEY = "sk-live-Qm7xV2pLk9RtZ4wNc8YbH3jD6fGs1aUe5TiO0nWq"  # no 8-character run of it repeats
R = "[redacted by evalrun]"

# The provider key variables the docs promise to keep out of t1/t2 (docs/model-calls.md), every one.
PROVIDER_KEY_VARS = (
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GOOGLE_API_KEY", "GEMINI_API_KEY",
    "MISTRAL_API_KEY", "COHERE_API_KEY", "CO_API_KEY", "GROQ_API_KEY", "TOGETHER_API_KEY", "AZURE_OPENAI_API_KEY",
    "AZURE_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "FIREWORKS_API_KEY",
    "PERPLEXITY_API_KEY", "PPLX_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACEHUB_API_TOKEN",
    "REPLICATE_API_TOKEN", "VOYAGE_API_KEY", "AI21_API_KEY", "CEREBRAS_API_KEY", "NVIDIA_API_KEY",
    "ANYSCALE_API_KEY", "LITELLM_API_KEY",
)


# --- which values are secrets ----------------------------------------------------------------------------


def test_the_constants_users_see() -> None:
    assert REDACTED == R
    assert PLACEHOLDER == "evalrun-placeholder-not-a-key"
    assert FRAGMENT == 8


@pytest.mark.parametrize("name", PROVIDER_KEY_VARS)
def test_every_provider_key_variable_is_a_key(name: str) -> None:
    assert name in KEY_VARS
    assert key_values({name: "sk-abcdefgh", "UNRELATED": "sk-zzzzzzzz"}) == {"sk-abcdefgh"}


def test_key_vars_adds_the_manifests_names_once_and_skips_empty_ones() -> None:
    assert key_vars() == PROVIDER_KEY_VARS
    assert key_vars(["MY_KEY", "", "OPENAI_API_KEY", "MY_KEY", "OTHER"]) == (*PROVIDER_KEY_VARS, "MY_KEY", "OTHER")
    assert key_values({"MY_KEY": "abcd"}, ["MY_KEY"]) == {"abcd"}
    assert key_values({"MY_KEY": "abcd"}) == set()


def test_key_values_skip_trivial_values_and_the_placeholder() -> None:
    env = {"OPENAI_API_KEY": "abcd", "ANTHROPIC_API_KEY": "abc", "GROQ_API_KEY": PLACEHOLDER, "HF_TOKEN": ""}
    assert key_values(env) == {"abcd"}  # 4 characters is a key, 3 is not


def test_secret_like_values_by_name_length_and_placeholder() -> None:
    env = {
        "DB_PASSWORD": "hunter22", "GITHUB_TOKEN": "ghp_abc", "AWS_SECRET_ACCESS_KEY": "wJalrX",
        "SESSION_COOKIE": "c00kie!", "MY_PRIVATE_PEM": "-----BEGIN", "X_CREDENTIALS": "cred123",
        "BASIC_AUTH": "user:pw", "PGPWD": "pgpass1", "lower_api_key": "lowerkey",
        "SHORT_TOKEN": "12345",  # 5 characters: too short to scrub from every message
        "SIX_TOKEN": "123456",
        "PWD": "/home/someone/project", "OLDPWD": "/home/someone",  # the shell's folders, no password
        "HOME": "/home/someone", "PATH": "/usr/bin:/bin", "EDITOR_PALETTE": "solarized",
        "OPENAI_API_KEY": PLACEHOLDER,
    }
    assert secret_like_values(env) == [
        "hunter22", "ghp_abc", "wJalrX", "c00kie!", "-----BEGIN", "cred123", "user:pw", "pgpass1", "lowerkey", "123456",
    ]


def test_a_runs_secrets_are_its_keys_and_secret_looking_values() -> None:
    env = {"OPENAI_API_KEY": "sk-1", "MY_MODEL_VAR": "mm-2", "DB_PASSWORD": "hunter22", "HOME": "/home/x"}
    assert set(known_secrets(env).values) == {"sk-1", "hunter22"}
    assert set(known_secrets(env, ["MY_MODEL_VAR"]).values) == {"sk-1", "mm-2", "hunter22"}
    assert set(known_secrets({"OPENAI_API_KEY": PLACEHOLDER}).values) == set()


# --- scrub: exact output ---------------------------------------------------------------------------------


def test_a_key_cut_at_every_offset_reads_exactly() -> None:
    for start in range(len(KEY)):
        for end in range(start, len(KEY) + 1):
            piece = KEY[start:end]
            hidden = R if len(piece) >= FRAGMENT else piece
            assert scrub(f"<{piece}>", {KEY}) == f"<{hidden}>", (start, end)
            assert scrub(f"ab {piece}", {KEY}) == f"ab {hidden}", (start, end)


def test_a_cut_key_among_letters_of_the_key_is_hidden_to_its_own_characters() -> None:
    # "aUe5" and "Qm7x" are characters of the key, but not next to the cut piece in the key
    assert scrub(f"aUe5{KEY[10:20]}Qm7x", {KEY}) == f"aUe5{R}Qm7x"
    assert scrub(f"Qm7x{KEY[-9:]}", {KEY}) == f"Qm7x{R}"
    assert scrub(KEY[:8], {KEY}) == R  # the text is exactly one fragment long


def test_a_key_with_one_character_changed_keeps_that_character() -> None:
    changed = KEY[:20] + "Q" + KEY[21:]  # "Q" is a character of the key, but not at offset 20
    assert scrub(changed, {KEY}) == f"{R}Q{R}"
    assert scrub(f"{KEY[:12]}Q{KEY[13:30]}", {KEY}) == f"{R}Q{R}"


def test_runs_that_touch_or_overlap_are_one_replacement_and_separate_runs_two() -> None:
    assert scrub(KEY + KEY, {KEY}) == R
    assert scrub(KEY[:20] + KEY[12:], {KEY}) == R  # two alignments that overlap
    assert scrub(KEY[:20] + KEY[20:], {KEY}) == R
    assert scrub(f"{KEY} and {KEY}.", {KEY}) == f"{R} and {R}."
    assert scrub(f"x{KEY}y{KEY[5:15]}z", {KEY, KEY[7:11]}) == f"x{R}y{R}z"  # a short key inside a long one's run


def test_a_run_that_starts_while_another_alignment_of_the_key_runs_is_kept() -> None:
    # text[3:12] is key[5:14] and text[5:15] is key[1:11]: two runs of one key, the second starting inside the
    # first; both must be hidden (losing the first would leave "aa" of the key behind)
    key = "babaaaaabaaaaa"
    assert scrub("abbaaabaaaaabaa", {key, "aababa"}) == f"abb{R}"
    assert scrub("abbaaabaaaaabaa", {key}) == f"abb{R}"


def test_a_key_whose_fragments_repeat_is_hidden_whole() -> None:
    key = "abcdefghabcdefgh-XYZ"
    assert scrub(f"<{key}>", {key}) == f"<{R}>"
    assert scrub("<abcdefgh>", {key}) == f"<{R}>"
    assert scrub("<abcdefghabcdefghabcdefgh>", {key}) == f"<{R}>"


def test_short_keys_are_hidden_whole_wherever_they_start() -> None:
    assert scrub("x12345678y", {"12345678"}) == f"x{R}y"  # exactly FRAGMENT characters
    assert scrub("x1234567y", {"12345678"}) == "x1234567y"
    assert scrub("aaaaa", {"aaaa"}) == R  # overlapping occurrences at 0 and 1
    assert scrub("-aaaa-aaaa", {"aaaa"}) == f"-{R}-{R}"
    assert scrub("abcd", {"abcd"}) == R  # the text exactly as long as the shortest key
    assert scrub("abc", {"abcd"}) == "abc"
    assert scrub("1 abcd 2 wxyz 3 abcq", {"abcd", "wxyz", "abce"}) == f"1 {R} 2 {R} 3 abcq"
    assert scrub("abcde", {"abcd", "abcde"}) == R
    assert scrub("zabcd", {"abcde", "abcd"}) == f"z{R}"


def test_nothing_to_hide_returns_the_text() -> None:
    assert scrub("", {KEY}) == ""
    assert scrub("ordinary words", set()) == "ordinary words"
    assert scrub("ordinary words", {""}) == "ordinary words"
    assert scrub("ordinary words that are long", {KEY}) == "ordinary words that are long"
    assert scrub(f"<{KEY}>", {KEY}, replacement="***") == "<***>"


def test_the_placeholder_is_kept_whatever_a_key_shares_with_it() -> None:
    assert scrub(PLACEHOLDER, {"evalrun-placeholder"}) == PLACEHOLDER  # shares its start
    assert scrub(PLACEHOLDER, {"placeholder-not-a-key"}) == PLACEHOLDER  # shares its end
    assert scrub(f"{PLACEHOLDER} evalrun-placeholder", {"evalrun-placeholder"}) == f"{PLACEHOLDER} {R}"
    assert scrub(f"{PLACEHOLDER}-x", {"placeholder-not-a-key-x"}) == f"evalrun-{R}"  # leaves it: not inside
    assert scrub(f"{PLACEHOLDER} {PLACEHOLDER}", {"placeholder-not"}) == f"{PLACEHOLDER} {PLACEHOLDER}"


# --- passwords in URLs and DSNs --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("postgresql://app:hunter22@db.example:5432/app", "postgresql://app:***@db.example:5432/app"),
        ("connect to redis://:s3cret@127.0.0.1:6379/0 now", "connect to redis://:***@127.0.0.1:6379/0 now"),
        ("http://user@host/path", "http://user@host/path"),  # no password
        ("https://host:8443/x", "https://host:8443/x"),  # a port, no password
        ("host=db password=hunter22 user=app", "host=db password=*** user=app"),
        ("PASSWORD=Hunter22 Pwd=x", "PASSWORD=*** Pwd=***"),
        ("dbname=a password='two words' port=5", "dbname=a password=*** port=5"),
        (r"password='it\'s' x", "password=*** x"),
        ("?token=abc&api_key=def&apikey=g&key=h&x=1", "?token=***&api_key=***&apikey=***&key=***&x=1"),
        ("sslpassword=p1 passwd=p2 pass=p3 secret=p4", "sslpassword=*** passwd=*** pass=*** secret=***"),
        ("password= empty", "password= empty"),
        ("mykey=visible my_token=visible", "mykey=visible my_token=visible"),
    ],
)
def test_redact_passwords_exact(text: str, redacted: str) -> None:
    assert redact_passwords(text) == redacted


def test_passwords_in_a_target() -> None:
    assert passwords_in("postgresql://app:hunter22@db/app") == ["hunter22"]
    assert passwords_in("host=db password='two words' user=u") == ["two words"]
    assert passwords_in(("postgresql://a:first1@h/db", "password=second2")) == ["first1", "second2"]
    assert passwords_in("postgresql://a:abcd@h/db password=abc") == ["abcd"]  # 3 characters is no password
    assert passwords_in("tcp:127.0.0.1:5432") == []
