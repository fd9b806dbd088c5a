"""``Check.judge``'s model call: one verdict ``{pass, reason}`` asked of a model through evalrun's proxy.

Stdlib only (urllib), loaded the first time a scorer calls ``judge()``, so a
scorer that never judges pays nothing for it.

The API it speaks is OpenAI-style chat completions: ``POST
$EVALRUN_MODEL_URL/v1/chat/completions`` with ``temperature: 0`` and a JSON
schema response format (``{"pass": bool, "reason": str}``), the header
``X-Evalrun-Session: judge`` so judge calls are their own replay session and
never shift the code-under-test's call indexes, and the key from
``OPENAI_API_KEY`` (a placeholder in t2: the proxy replays; the real key in t3).

It never calls anything in t1 (``EVALRUN_TIER=t1``) nor where evalrun gave
the eval no model endpoint: those are answered before any request.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import urllib.error
import urllib.request

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

JUDGE_SESSION = "judge"  # the proxy's session of judge calls (evalrun.models.replay.state knows it too)
NEEDS_MODEL = "judge() needs a model: t2 replays one, t3 calls one"
T1_MODEL_URL = "http://127.0.0.1:4/evalrun-t1-has-no-model"  # evalrun.models.scorer_env.T1_MODEL_URL
TIMEOUT_S = 120.0
MAX_REPLY = 1024 * 1024  # bytes read of a reply
RAW_SHOWN = 2000  # characters of an unusable reply kept as evidence
_SECRET_NAMES = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.IGNORECASE)

SYSTEM = (
    "You are a strict grader. Judge the SUBJECT against the RUBRIC (and the GROUND TRUTH when given). "
    'Answer with a JSON object only: {"pass": true or false, "reason": "one or two sentences citing the subject"}.'
)
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"pass": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["pass", "reason"],
    "additionalProperties": False,
}


class Outcome:
    """What a judge() call came to: a verdict, or why there is none (``problem``) with the raw reply."""

    def __init__(
        self, passed: bool = False, reason: str = "", problem: str | None = None, raw: str = "", identity: str = ""
    ) -> None:
        self.passed = passed
        self.reason = reason
        self.problem = problem
        self.raw = raw
        self.identity = identity  # "model#rubric-hash" of the judge asked; "" when none was


def identity(model: str, rubric: str) -> str:
    """Who judged: the model asked and a hash of what it was told (the system prompt and the rubric).

    A check judged by another model, or under another rubric or another
    evalrun's grading prompt, has another identity, so a judge swap is seen
    rather than compared as a change of the product.
    """
    digest = hashlib.sha256(f"{SYSTEM}\n{rubric}".encode("utf-8", errors="surrogatepass")).hexdigest()
    return f"{_MODEL_WORD.sub('_', model)[:100]}#{digest[:12]}"


def combined_identity(identities: list[str]) -> str:
    """One identity for a check that asked several judges: itself when they agree, else a hash of them all."""
    distinct = list(dict.fromkeys(identities))
    if len(distinct) == 1:
        return distinct[0]
    models = "+".join(dict.fromkeys(i.split("#", 1)[0] for i in distinct))[:100]
    return f"{models}#{hashlib.sha256(chr(10).join(distinct).encode()).hexdigest()[:12]}"


_MODEL_WORD = re.compile(r"[^A-Za-z0-9._:/@+-]")


def request_body(subject: str, rubric: str, ground_truth: str | None, model: str) -> dict[str, Any]:
    """The chat completion asked for: deterministic for the same inputs, so replay matches it."""
    parts = [f"RUBRIC:\n{rubric}"]
    if ground_truth is not None:
        parts.append(f"GROUND TRUTH:\n{ground_truth}")
    parts.append(f"SUBJECT:\n{subject}")
    return {
        "model": model,
        "temperature": 0,
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA},
        },
    }


def ask(subject: Any, rubric: Any, ground_truth: Any, model: str | None, environ: Any = None) -> Outcome:
    """Ask the judge model for a verdict; never raises for what the model or the network does."""
    env = os.environ if environ is None else environ
    if env.get("EVALRUN_TIER", "") == "t1":
        return Outcome(problem=NEEDS_MODEL)
    base = (env.get("EVALRUN_MODEL_URL") or "").rstrip("/")
    if not base:
        return Outcome(problem=f"{NEEDS_MODEL} (EVALRUN_MODEL_URL is not set: run it with evalrun, model = true)")
    if base.startswith(T1_MODEL_URL):
        return Outcome(problem=f"{NEEDS_MODEL} (this eval has no model endpoint: set model = true for it)")
    model = model or env.get("EVALRUN_JUDGE_MODEL") or ""
    if not model:
        return Outcome(problem='judge() needs a model name: set [models] judge = "..." in the manifest, or pass model=')
    who = identity(model, _text(rubric))
    body = request_body(_text(subject), _text(rubric), None if ground_truth is None else _text(ground_truth), model)
    headers = {"Content-Type": "application/json", "X-Evalrun-Session": JUDGE_SESSION}
    key = env.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(
        f"{base}/v1/chat/completions", data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
    )
    # The proxy is on 127.0.0.1: a machine-wide HTTP proxy must never see the call.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=TIMEOUT_S) as response:
            raw = response.read(MAX_REPLY).decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        raw = exc.read(MAX_REPLY).decode("utf-8", errors="replace")
        return Outcome(problem=f"judge(): the model answered HTTP {exc.code}", raw=_shown(raw, env), identity=who)
    except (OSError, ValueError) as exc:
        return Outcome(
            problem=f"judge(): cannot reach the model: {exc.__class__.__name__}: {_shown(str(exc), env)}", identity=who
        )
    outcome = parse_reply(raw, env)
    outcome.identity = who
    return outcome


def parse_reply(raw: str, environ: Any = None) -> Outcome:
    """The verdict in a chat completion's text ``raw``, or the reason it holds none."""
    env = os.environ if environ is None else environ
    invalid = Outcome(problem='judge(): the reply is not a verdict {"pass": true|false, "reason": "..."}', raw=_shown(raw, env))
    try:
        content = json.loads(raw)["choices"][0]["message"]["content"]
        verdict = json.loads(content)
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        return invalid
    if not isinstance(verdict, dict) or not isinstance(verdict.get("pass"), bool):
        return invalid
    reason = verdict.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return invalid
    return Outcome(passed=verdict["pass"], reason=_shown(reason, env))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


def _shown(text: str, env: Any) -> str:
    """``text`` with the environment's secret values removed, then cut (redacted before it is cut)."""
    for name, value in env.items():
        if _SECRET_NAMES.search(name) and isinstance(value, str) and len(value) >= 8 and value in text:
            text = text.replace(value, "[redacted]")
    return text if len(text) <= RAW_SHOWN else text[: RAW_SHOWN - 1] + "…"
