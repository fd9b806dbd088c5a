"""One message for an eval's model-call failures: the proxy's text a scorer quotes is said once, not twice."""

from __future__ import annotations

import json

from evalrun.models.failures import grouped_failures, shortened

MISMATCH = (
    "evalrun replay: call 1 of session 'chat' (POST /v1/messages) does not match its recording "
    'evals/sdk/fixtures/chat/0001.json: messages[0].content: recorded "hello", now "hello, edited"; '
    "the request changed since it was recorded: re-record with `evalrun t3 --record`"
)
FINDING = MISMATCH.split("; ", 1)[0]


def _eval_message(quoted: str) -> str:
    grouped = grouped_failures([MISMATCH], [])
    return "; ".join(grouped) + "; " + shortened(f'check "chat" failed: {quoted}', [MISMATCH], [])


def test_a_mismatch_quoted_verbatim_is_said_once() -> None:
    message = _eval_message(f"400 {MISMATCH}")
    assert message.count("does not match its recording") == 1, message
    assert message.endswith('check "chat" failed: 400 evalrun replay: does not match chat/0001.json'), message


def test_a_mismatch_quoted_inside_the_json_body_a_js_sdk_shows_is_said_once() -> None:
    # The Anthropic npm SDK's message is the status and the response body: the proxy's text JSON-escaped.
    body = json.dumps({"type": "error", "error": {"type": "evalrun_fixture_mismatch", "message": MISMATCH}})
    message = _eval_message(f"400 {body}")
    assert message.count("does not match its recording") == 1, message
    assert message.count("re-record with") == 1, message
    assert '"type":' not in message.split("; check", 1)[0]  # the eval's own line first, in full
    assert message.endswith('"}}'), message  # the rest of the scorer's quote is kept


def test_a_mismatch_quote_cut_short_by_the_scorer_is_said_once() -> None:
    message = _eval_message(f"400 {MISMATCH[:len(FINDING) + 20]}…")
    assert message.count("does not match its recording") == 1, message
    assert message.endswith("400 evalrun replay: does not match chat/0001.json…"), message
    untouched = 'check "x" failed: something else entirely; with a clause'
    assert shortened(untouched, [MISMATCH], []) == untouched
