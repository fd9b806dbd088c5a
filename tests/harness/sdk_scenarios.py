"""The real openai and anthropic SDKs' scenarios (tests/scorers/sdk_calls.py) as a t2/t3 project's manifest.

Each scenario is a t2 eval replaying what its ``-live`` t3 twin recorded from
the fake upstream; the keys are made up and must never leave evalrun.
"""

from __future__ import annotations

from typing import Any

from harness.manifest_builder import EvalBlock, an_eval, replayed_pair
from harness.manifest_builder import manifest as build_manifest
from harness.paths import SCORERS

OPENAI_KEY = "sk-test-sdks-0123456789abcdefOPENAI"

ANTHROPIC_KEY = "sk-ant-test-sdks-0123456789abcdefANTHROPIC"

KEYS = {"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}

SCORER = (SCORERS / "sdk_calls.py").read_text()

SCENARIOS = ("basics", "headers", "timeout", "concurrent", "gzip")


def sdk_eval(scenario: str, tier: str = "t2", name: str | None = None, **keys: Any) -> EvalBlock:
    """An eval of evals/sdk running ``scenario`` with model calls through evalrun."""
    return an_eval(name or scenario, ["python", "score.py", scenario], tier=tier, dir="evals/sdk", model=True, **keys)


def manifest(upstream: str | dict[str, str], scenarios: tuple[str, ...] = SCENARIOS, *more: EvalBlock,
             loner: str = "loner") -> str:
    """``upstream``: one for every provider, or one per provider (``{"openai": ..., "anthropic": ...}``).

    Each scenario is a t2 eval and its ``-live`` t3 twin; ``more`` are evals added after them.
    """
    evals = [e for name in scenarios for e in replayed_pair(name, ["python", "score.py", name], dir="evals/sdk", timeout=120)]
    # An eval of another name sharing the folder, recording for itself: its fixtures are not the others'.
    evals.append(sdk_eval(loner, "t3", f"{loner}-live"))
    return build_manifest(*evals, *more, tiers={"t2": {}, "t3": {}},
                          models={"upstream": upstream, "strict_replay": True}).text
