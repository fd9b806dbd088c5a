"""The real openai and anthropic SDKs' scenarios (tests/scorers/sdk_calls.py) as a t2/t3 project's manifest.

Each scenario is a t2 eval replaying what its ``-live`` t3 twin recorded from
the fake upstream; the keys are made up and must never leave evalrun.
"""

from __future__ import annotations

from harness.paths import SCORERS

OPENAI_KEY = "sk-test-sdks-0123456789abcdefOPENAI"

ANTHROPIC_KEY = "sk-ant-test-sdks-0123456789abcdefANTHROPIC"

KEYS = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}

SCORER = (SCORERS / "sdk_calls.py").read_text()

SCENARIOS = ("basics", "headers", "timeout", "concurrent", "gzip")


def manifest(upstream: str | dict[str, str], scenarios: tuple[str, ...] = SCENARIOS, extra_models: str = "") -> str:
    """``upstream``: one for every provider, or one per provider (``{"openai": ..., "anthropic": ...}``)."""
    if isinstance(upstream, dict):
        setting = "{ " + ", ".join(f'{p} = "{u}"' for p, u in upstream.items()) + " }"
    else:
        setting = f'"{upstream}"'
    text = f'[tiers.t2]\n[tiers.t3]\n\n[models]\nupstream = {setting}\nstrict_replay = true\n{extra_models}\n'
    for name in scenarios:
        run = f'["python", "score.py", "{name}"]'
        text += f'[[evals]]\nname = "{name}"\ntier = "t2"\ndir = "evals/sdk"\nrun = {run}\nmodel = true\ntimeout = 120\n\n'
        text += (f'[[evals]]\nname = "{name}-live"\ntier = "t3"\ndir = "evals/sdk"\nrun = {run}\nmodel = true\n'
                 f'timeout = 120\nfixtures_for = "{name}"\n\n')
    # An eval of another name sharing the folder, recording for itself: its fixtures are not the others'.
    text += '[[evals]]\nname = "loner-live"\ntier = "t3"\ndir = "evals/sdk"\nrun = ["python", "score.py", "loner"]\nmodel = true\n'
    return text
