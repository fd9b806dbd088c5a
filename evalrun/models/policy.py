"""Keeping each tier's promise about model calls, for one run.

This module owns, per invocation: the scorers' environment with provider keys
kept out of t1 and t2 (``evalrun.models.scorer_env``), the record/replay proxy started when
a planned t2/t3 eval uses models (``evalrun.models.replay``), each eval's endpoint
variables, the budget, and what the proxy learnt about each eval afterwards:
which provider and models answered, calls and tokens, missing fixtures, and a
tripped budget — which makes the eval ``budget`` ("not checked"), never
``failed``, so a tripped cap is not blamed on the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from evalrun.models.scorer_env import endpoint_env, scrub_environment
from evalrun.secrets import key_values, scrub
from evalrun.manifest import Manifest
from evalrun.plan import PlannedEval
from evalrun.results import EvalResult, Status

BUDGET_MESSAGE = "not checked: budget exhausted"


class ModelCalls:
    """The proxy and the key policy of one run of one tier (a context manager)."""

    def __init__(
        self, manifest: Manifest, tier: str, evals: list[PlannedEval], environ: Mapping[str, str], record: bool
    ) -> None:
        self.manifest = manifest
        self.tier = tier
        self.key_vars = list(manifest.models.key_vars)
        self.secrets = key_values(environ, self.key_vars)
        self.base_env = scrub_environment(environ, tier, None, self.key_vars)
        self._users = [p for p in evals if manifest.uses_model(p.spec)]
        self._bases: dict[tuple[str, int], str] = {}  # (eval, repeat) -> its base URL on the proxy
        # Evals with more than one run: each run is its own session on the proxy (evalrun.repeats).
        self._repeated = {p.name for p in evals if p.repeat > 0}
        self.proxy: Any = None
        if self._users:
            from evalrun.models.replay.proxy import ReplayProxy  # only runs that use models pay for it

            mode = "replay" if tier == "t2" else ("record" if record else "live")
            self.proxy = ReplayProxy(
                mode,
                upstream=manifest.models.upstream,
                budget=manifest.tier(tier).budget,
                key_env=dict(environ),
                redact_values=set(self.secrets),
            )

    @property
    def mode(self) -> str | None:
        return self.proxy.mode if self.proxy is not None else None

    def __enter__(self) -> ModelCalls:
        if self.proxy is not None:
            self.proxy.start()
            for p in self._users:
                repeat = p.repeat if p.name in self._repeated else None
                self._bases[(p.name, p.repeat)] = self.proxy.register_eval(
                    p.name, p.dir / "fixtures", budget=p.spec.budget, repeat=repeat
                )
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.proxy is not None:
            self.proxy.stop()

    def env_for(self, planned: PlannedEval) -> dict[str, str]:
        """The endpoint variables of an eval that uses models: its own prefix on the proxy."""
        base = self._bases.get((planned.name, planned.repeat))
        return endpoint_env(base) if base else {}

    def budget_exhausted(self) -> bool:
        return self.proxy is not None and self.proxy.budget_exhausted()

    def finalize(self, planned: PlannedEval, result: EvalResult) -> EvalResult:
        """Fold what the proxy saw into the result; redact key values from what is kept."""
        update: dict[str, Any] = {}
        key = (planned.name, planned.repeat)
        if key in self._bases and result.status not in (Status.SKIPPED, Status.INTERRUPTED):
            report = self.proxy.eval_report(planned.name, repeat=planned.repeat if planned.name in self._repeated else None)
            update["models"] = report.as_record()
            failures = report.failures(self.manifest.models.strict_replay)
            if report.budget_hit:
                update["status"] = Status.BUDGET
                update["message"] = f"{BUDGET_MESSAGE} ({report.budget_message})" if report.budget_message else BUDGET_MESSAGE
            elif failures and result.status in (Status.PASSED, Status.FAILED):
                # The code under test may have swallowed the proxy's error: the eval fails anyway.
                update["status"] = Status.FAILED
                update["message"] = "; ".join(failures) + (f"; {result.message}" if result.message else "")
            elif report.unplayed and result.status is Status.PASSED:
                update["message"] = "note: " + "; ".join(report.unplayed)
        result = result.model_copy(update=update) if update else result
        return self.redact(result)

    def redact(self, result: EvalResult) -> EvalResult:
        if not self.secrets:
            return result
        fields = {"message": result.message, "output_tail": result.output_tail}
        changed = {k: self._scrub(v) for k, v in fields.items() if v and any(s in v for s in self.secrets)}
        checks = [
            c.model_copy(update={"message": self._scrub(c.message), "evidence": self._scrub(c.evidence)})
            if any(s in (c.message or "") + (c.evidence or "") for s in self.secrets)
            else c
            for c in result.checks
        ]
        return result.model_copy(update={**changed, "checks": checks})

    def _scrub(self, text: str | None) -> str | None:
        return scrub(text, self.secrets) if text is not None else None

def describe_models(result: EvalResult) -> str | None:
    """``agent: openai gpt-4o-mini-2024-07-18, 6 calls, 1234 tokens (replay)`` for the summary."""
    m = result.models
    if not m or not m.get("calls"):
        return None
    models = ", ".join(m.get("models") or []) or "no model named"
    tokens = (m.get("tokens") or {}).get("total", 0)
    return f"{result.name}: {m.get('provider') or 'unknown provider'} {models}, {m['calls']} call{'s' if m['calls'] != 1 else ''}, {tokens} tokens ({m.get('mode')})"
