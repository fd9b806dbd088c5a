"""Secrets never leave evalrun, whole or in part: scrubbing, and every output of a run that holds a key."""

from __future__ import annotations

import os
import re

import pytest

from harness import eval_entry

from evalrun.secrets import FRAGMENT, PLACEHOLDER, REDACTED, scrub

KEY = "sk-live-Qm7xV2pLk9RtZ4wNc8YbH3jD6fGs1aUe5TiO0nWq"


def fragments(text: str, secret: str = KEY) -> list[str]:
    """Every run of FRAGMENT or more characters of ``secret`` found in ``text``."""
    return [secret[i : i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1) if secret[i : i + FRAGMENT] in text]


def test_scrub_replaces_the_whole_value_and_any_cut_part_of_it() -> None:
    assert scrub(f"key={KEY};", {KEY}) == f"key={REDACTED};"
    # Cut by someone before it reached us: a tail that starts inside the key, a message capped inside it.
    assert fragments(scrub(f"{KEY[17:]} and more", {KEY})) == []
    assert fragments(scrub(f"message: {KEY[:29]}…", {KEY})) == []
    assert fragments(scrub(f"a{KEY[5:5 + FRAGMENT]}b", {KEY})) == []
    # Short runs that merely share letters with a key stay: "sk-live" alone is no secret.
    assert scrub("sk-live is a prefix", {KEY}) == "sk-live is a prefix"


def test_scrub_never_touches_evalruns_placeholder() -> None:
    key = "sk-test-evalrun-placeholder-0123456789"  # shares a long run with the placeholder
    assert scrub(f"{PLACEHOLDER} {key}", {key}) == f"{PLACEHOLDER} {REDACTED}"


LEAKY_SCORER = """
import json, os, sys
key = os.environ["OPENAI_API_KEY"]
report = {
    "checks": [
        {"name": "uses " + key, "assertions": 1, "passed": True},
        {"name": "long message", "assertions": 1, "passed": True,
          "message": "x" * 480 + key, "evidence": "evidence " + key},
    ],
    "metrics": {"which_key": key, "half": key[:20]},
}
json.dump(report, open(os.environ["EVALRUN_REPORT"], "w"))
# The runner keeps only the end of the output: make that end start inside the key.
sys.stdout.write("A" * 100 + key + "B" * 3990 + "\\n")
"""


def test_a_key_in_check_names_messages_metrics_and_output_reaches_no_file_and_no_screen(project) -> None:
    proj = project(
        {
            "manifest.toml": '[tiers.t3]\n' + eval_entry("leaky", tier="t3"),
            "evals/leaky/score.py": LEAKY_SCORER,
        }
    )
    env = {"OPENAI_API_KEY": KEY}
    run = proj.run("t3", "--junit", "out/junit.xml", "--markdown", "out/summary.md", env=env)
    assert run.code == 0, run.output
    update = proj.run("baseline", "--update", "t3", env=env)
    assert update.code == 0, update.output
    written = [
        proj.root / ".evalrun" / "results" / "t3.json",
        proj.root / "out" / "junit.xml",
        proj.root / "out" / "summary.md",
        proj.root / "baselines" / "t3.toml",
    ]
    for path in written:
        text = path.read_text(encoding="utf-8")
        assert fragments(text) == [], f"{path.name} holds part of the key"
        if path.suffix != ".md":  # a passing run's summary lists no check names
            assert REDACTED in text, f"{path.name} shows no redaction: the scorer's key never reached it?"
    for output in (run.output, update.output):
        assert fragments(output) == []
    results = proj.results("t3")
    names = [c["name"] for c in results["evals"][0]["checks"]]
    assert f"uses {REDACTED}" in names
    assert re.search(r"B{100}", results["evals"][0]["output_tail"])  # the tail is kept, only the key is gone


def test_the_placeholder_a_scorer_sees_is_no_secret_of_an_evalrun_it_runs() -> None:
    from evalrun.secrets import known_secrets

    env = {"OPENAI_API_KEY": PLACEHOLDER, "MY_TOKEN": PLACEHOLDER, "GITHUB_TOKEN": "ghp_realvalue123456"}
    assert set(known_secrets(env).values) == {"ghp_realvalue123456"}
    assert scrub("program not found: evalrun-no-such-scorer", set(known_secrets(env).values)) == "program not found: evalrun-no-such-scorer"


# -- the error boundary ----------------------------------------------------------
#
# A bug in evalrun is exit 70 with one line and a traceback log; an error is one
# line. Either may carry what an exception was built from: both are scrubbed.

_KEY = "sk-test-boundary-0123456789abcdefXYZ"
_DSN = "postgresql://evalrun:s3cret-pass-word@127.0.0.1:5432/db"


def _main_raising(monkeypatch, capsys, exc: BaseException) -> tuple[int, str]:
    import evalrun.commands.run
    from evalrun.cli import main

    def explode(*args: object, **kwargs: object) -> int:
        raise exc

    monkeypatch.setenv("OPENAI_API_KEY", _KEY)
    monkeypatch.setattr(evalrun.commands.run, "run_tier", explode)
    code = main(["t1"])
    return code, capsys.readouterr().err


def test_an_internal_error_line_and_its_traceback_log_hold_no_secret(monkeypatch, capsys) -> None:
    code, err = _main_raising(monkeypatch, capsys, RuntimeError(f"cannot reach {_DSN} with {_KEY}"))
    assert code == 70
    log = re.search(r"\(traceback in (\S+)\)$", err.strip()).group(1)
    try:
        with open(log, encoding="utf-8") as fh:
            traceback = fh.read()
    finally:
        os.unlink(log)
    (line,) = err.splitlines()
    assert line.startswith("evalrun: internal error: RuntimeError: cannot reach postgresql://evalrun:***@127.0.0.1")
    assert "Traceback (most recent call last)" in traceback and "RuntimeError" in traceback
    for text in (line, traceback):
        assert _KEY not in text and _KEY[:FRAGMENT] not in text and "s3cret-pass-word" not in text
        assert REDACTED in text


def test_an_error_line_holds_no_secret(monkeypatch, capsys) -> None:
    from evalrun.errors import UsageError

    code, err = _main_raising(monkeypatch, capsys, UsageError(f"--history-url {_DSN}: token {_KEY} refused"))
    assert code == 2
    assert err == "evalrun: error: --history-url postgresql://evalrun:***@127.0.0.1:5432/db: token [redacted by evalrun] refused\n"


def test_a_key_that_spells_part_of_a_field_name_or_a_status_is_redacted_from_the_text_only() -> None:
    # OPENAI_API_KEY=test (a dummy key for a fake or replayed run) is in every result's "skipped_tests", and "failed"
    # is a status: scrubbing the record's field names or its status made it no record (evalrun crashed, exit 70).
    from evalrun.results import CheckRate, CheckResult, EvalResult, SkippedTest, Status, redact_result

    rate = CheckRate(runs=2, passes=1, seen=2, pass_at_k={"1": 0.5})
    result = EvalResult(name="login-test", tier="t1", dir="evals/test", status=Status.FAILED, exit_code=1,
                        message="login with test failed", metrics={"test users": "3 test users"},
                        checks=[CheckResult("test login", 1, False, "failed: test", rate=rate)],
                        skipped_tests=[SkippedTest(name="test slow", reason="a test")])
    def texts(r: EvalResult) -> list[str]:
        return [r.message, *r.metrics, *r.metrics.values(), r.checks[0].name, r.checks[0].message,
                r.skipped_tests[0].name, r.skipped_tests[0].reason]

    for secrets in ({"test"}, {"failed"}, {"test", "failed"}):
        clean = redact_result(result, secrets)
        assert (clean.name, clean.dir, clean.status) == ("login-test", "evals/test", Status.FAILED)
        expected = texts(result)
        for secret in secrets:
            expected = [text.replace(secret, REDACTED) for text in expected]
        assert texts(clean) == expected
        assert clean.checks[0].rate == rate and clean.exit_code == 1


@pytest.mark.parametrize("secret", ['ab"cd"ef"gh"ij', "k\\e\\y\\v\\a\\l\\u\\e", "tab\tin\tthe\tkey\tvalue", 'pass"word'])
def test_a_key_whose_characters_json_escapes_is_redacted_from_a_result_too(secret: str) -> None:
    # The cheap test first looks for the key in the result's JSON, where a quote, a backslash or a control
    # character is written escaped: a key with one of them in every 8 characters was never found there, and the
    # result was kept as it was, key and all.
    from evalrun.results import CheckResult, EvalResult, Status, redact_result

    result = EvalResult(name="e", tier="t1", dir="evals/e", status=Status.FAILED, message=f"auth {secret} refused",
                        checks=[CheckResult(f"uses {secret}", 1, False, evidence=secret)])
    clean = redact_result(result, {secret})
    assert secret not in clean.message and secret not in clean.checks[0].name and secret not in clean.checks[0].evidence
    assert REDACTED in clean.message
