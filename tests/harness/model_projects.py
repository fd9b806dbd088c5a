"""Projects whose evals call a model through whatever OPENAI_BASE_URL says (evalrun's proxy, or nothing)."""

from __future__ import annotations

from harness.project import eval_entry

SECRET = "sk-test-evalrun-SECRET-0123456789abcdef"

# Makes CALLS chat calls through whatever OPENAI_BASE_URL says, swallowing errors
# as careless code under test would; reports what it saw.
CALLER = """
import json, os, urllib.request, urllib.error
from evalrun import scorer

base = os.environ.get("OPENAI_BASE_URL", "")
key = os.environ.get("OPENAI_API_KEY", "")
answers = []
for i in range(int(os.environ.get("CALLS", "1"))):
    req = urllib.request.Request(
        base + "/chat/completions",
        data=json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"question {i}"}]}).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer " + key},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            answers.append(json.load(resp)["choices"][0]["message"]["content"])
    except Exception as exc:  # swallowed on purpose
        answers.append(f"error: {exc}")
with scorer.check("the model answered") as c:
    c.evidence(json.dumps({"base": base, "key": key, "answers": answers}))
    c.true(all(not a.startswith("error") for a in answers) or os.environ.get("TOLERATE") == "1", answers)
"""


def model_project(project, tier: str = "t2", evals: tuple[str, ...] = ("caller",), extra: str = "", tier_table: str = ""):
    entries = "".join(eval_entry(n, tier=tier, extra=f"model = true\n{extra}") for n in evals)
    files = {"manifest.toml": tier_table + entries}
    files.update({f"evals/{n}/score.py": CALLER for n in evals})
    return project(files)
