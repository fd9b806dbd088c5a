"""A scorer whose code under test calls a model with the real openai SDK, and whose check asks a judge.

    python judge_calls.py full        # call "hello", judge the answer, call "goodbye"
    python judge_calls.py judge-only  # only the judge check (the t1 eval)

Used by tests/cli/test_judge_cli.py: the judge call sits between the two calls of
the code under test, so a judge that shared their session would shift the second.
"""

from __future__ import annotations

import sys

from evalrun import scorer

MODE = sys.argv[1] if len(sys.argv) > 1 else "full"
RUBRIC = "The answer repeats the user's greeting."

if MODE == "full":
    import httpx
    import openai

    client = openai.OpenAI(max_retries=0, timeout=30, http_client=httpx.Client(trust_env=False))

    def ask(text: str) -> str:
        try:
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": text}])
        except openai.APIStatusError as exc:
            return f"error {exc.status_code}"
        return reply.choices[0].message.content or ""

    first = ask("hello")
    with scorer.check("the first answer is judged") as c:
        c.judge(first, RUBRIC, ground_truth="hello")
    second = ask("goodbye")
    with scorer.check("the code under test got both answers") as c:
        c.contains(first, "hello")
        c.contains(second, "goodbye")
else:
    with scorer.check("the first answer is judged") as c:
        c.judge("answer 1: hello", RUBRIC, ground_truth="hello")
