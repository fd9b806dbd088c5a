"""Keeping each tier's promise about model calls, for one run.

This module owns, per invocation (the scorers' environment with provider keys
kept out of t1 and t2 is the run's context's, ``evalrun.run.context``): the record/replay proxy started when
a planned t2/t3 eval uses models (``evalrun.models.replay``), each eval's endpoint
variables, the budget, and what the proxy learnt about each eval afterwards:
which provider and models answered (the judge's apart), calls, tokens and cost
(``evalrun.models.cost``), missing fixtures, and a tripped budget — which makes the eval ``budget`` ("not checked"), never
``failed``, so a tripped cap is not blamed on the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from evalrun.errors import UsageError
from evalrun.models.scorer_env import endpoint_env
from evalrun.models.upstreams import Upstream, UpstreamProblem, eval_upstreams, run_upstreams
from evalrun.manifest import Manifest
from evalrun.plan import PlannedEval, make_plan
from evalrun.results import EvalResult, Status

if TYPE_CHECKING:
    from evalrun.run.context import RunContext

BUDGET_MESSAGE = "not checked: budget exhausted"


class ModelCalls:
    """The proxy and the key policy of one run of one tier (a context manager)."""

    def __init__(self, context: RunContext, evals: list[PlannedEval], record: bool) -> None:
        """From the run's ``context``: its manifest and tier; evalrun's own environment, read for
        ``EVALRUN_UPSTREAM`` and, in record and live modes, the keys sent upstream; the run's provider key values
        (``context.secrets.keys``), which the proxy keeps out of fixtures and messages."""
        manifest, tier, environ, secrets = context.manifest, context.tier, context.environ, context.secrets.keys
        self.manifest = manifest
        self.tier = tier
        self._users = [p for p in evals if manifest.uses_model(p.spec)]
        self._bases: dict[tuple[str, int], str] = {}  # (eval, repeat) -> its base URL on the proxy
        # Evals with more than one run: each run is its own session on the proxy (evalrun.repeats).
        self._repeated = {p.name for p in evals if p.repeat > 0}
        self.proxy: Any = None
        # Each provider's upstream (record and live), the run's and those an eval's env changes.
        self.upstreams: dict[str, Upstream] = {}
        self._eval_upstreams: dict[tuple[str, str | None], dict[str, Upstream]] = {}
        if self._users:
            from evalrun.models.replay.proxy import ReplayProxy  # only runs that use models pay for it

            mode = "replay" if tier == "t2" else ("record" if record else "live")
            if mode != "replay":
                self.upstreams = upstreams_for_run(manifest, environ)
                for p in self._users:
                    own = upstreams_for_eval(manifest, self.upstreams, p)
                    if own != self.upstreams:
                        self._eval_upstreams[(p.name, p.experiment)] = own
            self.proxy = ReplayProxy(
                mode,
                upstream={provider: u.url for provider, u in self.upstreams.items()} or None,
                budget=manifest.tier(tier).budget,
                key_env=dict(environ),
                redact_values=set(secrets),
                match=manifest.models.replay_match,
                prices=manifest.models.prices if self._reports_cost(tier) else None,
            )

    def _reports_cost(self, tier: str) -> bool:
        """Cost is reported once the suite names a price or a dollar budget; else it is not a concern."""
        return bool(self.manifest.models.prices) or any(b is not None and b.usd is not None for b in self._budgets(tier))

    def _budgets(self, tier: str) -> list[Any]:
        return [self.manifest.tier(tier).budget, *(p.spec.budget for p in self._users)]

    def _usd_capped(self, planned: PlannedEval) -> bool:
        tier_budget = self.manifest.tier(self.tier).budget
        return any(b is not None and b.usd is not None for b in (tier_budget, planned.spec.budget))

    @property
    def mode(self) -> str | None:
        return self.proxy.mode if self.proxy is not None else None

    def __enter__(self) -> ModelCalls:
        if self.proxy is not None:
            self.proxy.start()
            for p in self._users:
                owner, folder = p.spec.fixtures_for, p.dir
                if owner is not None:  # recording (or playing) another eval's fixtures, in its folder
                    spec = next(e for e in self.manifest.evals if e.name == owner)
                    folder = self.manifest.eval_dir(spec)
                fixtures = fixtures_dir(folder, p.experiment)
                repeat = p.repeat if p.name in self._repeated else None
                recorders = self._recorders(owner or p.spec.name)
                self._bases[(p.name, p.repeat)] = self.proxy.register_eval(
                    p.name,
                    fixtures,
                    budget=p.spec.budget,
                    session=owner or p.spec.name,  # an experiment's folder holds the eval's own session names
                    repeat=repeat,
                    column=p.experiment,
                    column_budget=p.column.budget if p.column is not None else None,
                    upstreams={k: u.url for k, u in self._eval_upstreams.get((p.name, p.experiment), {}).items()} or None,
                    record_command=record_command(recorders),
                )
        return self

    def own_upstreams(self) -> list[tuple[str, str | None, dict[str, Upstream]]]:
        """Each eval (and experiment) whose own ``env`` sends a provider elsewhere: the providers it changes."""
        return [(name, experiment, {p: u for p, u in own.items() if u != self.upstreams[p]})
                for (name, experiment), own in sorted(self._eval_upstreams.items(),
                                                      key=lambda kv: (kv[0][0], kv[0][1] or ""))]

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.proxy is not None:
            self.proxy.stop()

    def _recorders(self, owner: str) -> list[str]:
        """The t3 evals whose ``--record`` writes ``owner``'s fixtures (as ``evalrun dry`` names them)."""
        return [e.name for e in self.manifest.evals
                if e.tier == "t3" and self.manifest.uses_model(e) and (e.fixtures_for or e.name) == owner]

    def env_for(self, planned: PlannedEval) -> dict[str, str]:
        """The endpoint variables of an eval that uses models: its own prefix on the proxy."""
        base = self._bases.get((planned.name, planned.repeat))
        if not base:
            return {}
        env = endpoint_env(base)
        if self.manifest.models.judge:
            env["EVALRUN_JUDGE_MODEL"] = self.manifest.models.judge  # what the SDK's judge() asks
        return env

    def calls_so_far(self, name: str) -> int | None:
        """Model calls the eval ``name`` made so far (None when it uses no model): the progress line shows them."""
        if self.proxy is None or not any(p.name == name for p in self._users):
            return None
        return self.proxy.calls_so_far(name)

    def budget_exhausted(self, planned: PlannedEval | None = None) -> bool:
        """The run's budget, or that of ``planned``'s experiment, allows no further call."""
        column = planned.experiment if planned is not None else None
        return self.proxy is not None and self.proxy.budget_exhausted(column)

    def finalize(self, planned: PlannedEval, result: EvalResult) -> EvalResult:
        """Fold what the proxy saw into the result (which the pipeline then redacts)."""
        update: dict[str, Any] = {}
        key = (planned.name, planned.repeat)
        if key in self._bases and result.status not in (Status.SKIPPED, Status.INTERRUPTED):
            report = self.proxy.eval_report(planned.name, repeat=planned.repeat if planned.name in self._repeated else None)
            update["models"] = _relative_fixtures(report.as_record(), self.manifest.root)
            failures = report.failures(self.manifest.models.strict_replay)
            if report.budget_hit:
                update["status"] = Status.BUDGET
                update["message"] = f"{BUDGET_MESSAGE} ({report.budget_message})" if report.budget_message else BUDGET_MESSAGE
            elif failures and result.status in (Status.PASSED, Status.FAILED):
                # The code under test may have swallowed the proxy's error: the eval fails anyway.
                update["status"] = Status.FAILED
                # Grouped, each fix said once; the proxy's text the scorer quotes cut to the file it is about.
                from evalrun.models.failures import grouped_failures, shortened  # local: loaded only when a model call failed

                owner = planned.spec.fixtures_for or planned.spec.name
                grouped = grouped_failures(failures, report.missing_fixtures,
                                           record_command(self._recorders(owner)))
                quoted = shortened(result.message, failures, report.missing_fixtures) if result.message else ""
                update["message"] = "; ".join(grouped) + (f"; {quoted}" if quoted else "")
            elif report.unplayed and result.status is Status.PASSED:
                update["message"] = "note: " + "; ".join(report.unplayed)
            if report.uncounted_calls:
                # Never free, never silent: a stream that reported no usage although asked for it.
                from evalrun.text import plural

                note = (f"note: {plural(report.uncounted_calls, 'streamed call')} "
                        "reported no usage although asked (stream_options.include_usage): their tokens are not "
                        "counted, and a tokens or usd budget cannot cap them")
                current = update.get("message", result.message)
                update["message"] = f"{current}; {note}" if current else note
            unpriced = (report.cost or {}).get("unpriced_calls")
            if unpriced and self._usd_capped(planned):
                # Loud, and never as free: the usd budget could not count these calls.
                from evalrun.models.cost import unpriced_note

                note = f"note: usd budget cannot count {unpriced_note(report.cost or {})}"
                current = update.get("message", result.message)
                update["message"] = f"{current}; {note}" if current else note
        return replace(result, **update) if update else result


def upstreams_for_run(manifest: Manifest, environ: Mapping[str, str]) -> dict[str, Upstream]:
    """Each provider's upstream for the run (``evalrun.models.upstreams``); a bad setting is exit 2, one line."""
    try:
        return run_upstreams(manifest.models.upstream, environ)
    except UpstreamProblem as exc:
        raise UsageError(_where(manifest, str(exc))) from None


def upstream_problems(manifest: Manifest, environ: Mapping[str, str]) -> list[str]:
    """What a live or recording run would refuse about where model calls go (``evalrun check``): the run's own
    upstream settings, then each t3 eval's ``env`` (only t3 calls a provider; t2 replays). One line each; a
    setting of the manifest's is named in its file (``manifest.toml: evals[3] ...``), one of evalrun's
    environment stands alone (``is_manifest_problem`` tells them apart)."""
    users = [p for p in make_plan(manifest, "t3", [], [], None).evals if manifest.uses_model(p.spec)]
    if not users:
        return []
    try:
        run = upstreams_for_run(manifest, environ)
    except UsageError as exc:
        return [str(exc)]
    problems: dict[str, str] = {}
    for planned in users:
        try:
            upstreams_for_eval(manifest, run, planned)
        except UsageError as exc:
            problems.setdefault(planned.spec.name, str(exc))
    return list(problems.values())


def is_manifest_problem(manifest: Manifest, problem: str) -> bool:
    """Whether an ``upstream_problems`` line is about the manifest (else: about evalrun's environment)."""
    return problem.startswith(f"{manifest.path.name}: ")


def record_command(recorders: list[str]) -> str:
    """``evalrun t3 --record -e NAME``: re-records only the t3 eval(s) that write these fixtures, not every t3 eval."""
    return "evalrun t3 --record" + "".join(f" -e {name}" for name in recorders[:1])


def upstreams_for_eval(manifest: Manifest, run: Mapping[str, Upstream], planned: PlannedEval) -> dict[str, Upstream]:
    """``run``'s upstreams with those ``planned``'s env sets where the manifest and the run named none."""
    index = next((i for i, e in enumerate(manifest.evals) if e is planned.spec), None)
    label = f'evals[{index}] ("{planned.spec.name}")' if index is not None else f'eval "{planned.spec.name}"'
    try:
        return eval_upstreams(run, planned.env(), label)
    except UpstreamProblem as exc:
        raise UsageError(_where(manifest, str(exc))) from None


def _where(manifest: Manifest, problem: str) -> str:
    # A setting of the manifest's is named in its file; one of the environment's stands alone.
    return f"{manifest.path.name}: {problem}" if problem.startswith(("[models]", "evals[", "eval ")) else problem


def _relative_fixtures(record: dict[str, Any], root: Path) -> dict[str, Any]:
    """The call log's fixture files named relative to the manifest's folder, as every other path of a result."""
    for call in record.get("call_log") or []:
        fixture = call.get("fixture")
        if fixture:
            try:
                call["fixture"] = Path(fixture).relative_to(root).as_posix()
            except ValueError:
                pass
    return record


def fixtures_dir(eval_dir: Path, experiment: str | None) -> Path:
    """``<eval>/fixtures``, or ``<eval>/fixtures/@<experiment>``: two columns' recordings never mix."""
    folder = eval_dir / "fixtures"
    return folder / f"@{experiment}" if experiment else folder
