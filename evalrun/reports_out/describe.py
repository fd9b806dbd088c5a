"""The words every output shares: the terminal, JUnit XML, Markdown and GitHub annotations.

Each reporter takes a finished ``RunResults`` and renders it; none decides
anything. What they share lives here, so that they say the same thing in
the same words: the verdict for an exit code, the one-line story of a
failed, skipped or regressed eval, what narrowed a plan, a repeated eval's
runs and pass rates, the models that answered and what they cost. The domain
modules (``repeats``, ``models.cost``, ...) hand over plain records; the
sentences are made here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalrun.baseline import update_command
from evalrun.errors import ExitCode
from evalrun.models.cost import unpriced_note
from evalrun.results import (
    BaselineChange, CheckResult, EvalResult, JudgeCalibration, NetworkIsolation, RunResults, Status, validate_network,
)
from evalrun.text import plural, seen_words

if TYPE_CHECKING:
    from evalrun.manifest.schema import Budget
    from evalrun.plan import Plan
    from evalrun.repeats import FlakyCheck


# Each exit code's words: the terminal, the summary, JUnit, Markdown, the HTML report and bites say the same.
VERDICT_WORDS = {
    ExitCode.OK: "passed",
    ExitCode.FAILED: "failed",
    ExitCode.USAGE: "usage or configuration error",
    ExitCode.REGRESSED: "baseline regressed",
    ExitCode.UNCHECKED: "not everything was checked",
    ExitCode.NOTHING_SELECTED: "nothing was selected to run",
    ExitCode.INTERRUPTED: "interrupted; partial results",
}


def describe_verdict(results: RunResults) -> str:
    """``failed (exit 1)``: the verdict a reader needs first."""
    code = results.exit_code
    if code is None:
        return "interrupted (no exit code)" if results.interrupted else "unfinished (no exit code)"
    try:
        label = VERDICT_WORDS[ExitCode(code)]  # the terminal's words, so report and console agree
    except ValueError:
        label = "unknown outcome"
    return f"{label} (exit {code})"


def failed_checks(result: EvalResult) -> list[str]:
    """``name: message`` of each failed check, in report order."""
    return [f"{c.name}: {c.message}" if c.message else c.name for c in result.checks if not c.passed]


def describe_failure(result: EvalResult) -> str:
    """Why an eval failed, errored or timed out, in one paragraph (may hold newlines)."""
    lines: list[str] = []
    if result.status is Status.TIMEOUT:
        lines.append(result.message or "timed out")
    elif result.message:
        lines.append(result.message)
    failures = failed_checks(result)
    if failures:
        lines.append(f"{plural(len(failures), 'failed check')}: " + failures[0])
        lines.extend(failures[1:])
    return "\n".join(lines) or result.status.value


def describe_unchecked(result: EvalResult) -> str:
    """Why an eval was not checked: ``skipped: env OPENAI_API_KEY is not set``."""
    return f"{result.status.value}: {result.message}" if result.message else result.status.value


def regression_case_name(change: BaselineChange) -> str:
    """A stable test name for a regression: counts stay out so CI history lines up across runs."""
    if change.check is None:
        return f'baseline: eval "{change.eval}" vanished'
    if change.kind == "weakened":
        return f'baseline: check "{change.check}" asserts less'
    if change.kind == "decayed":  # a repeated eval's pass rate dropped beyond chance (evalrun.baseline_rates)
        return f'baseline: check "{change.check}" passes less often'
    if change.kind == "improved":
        return f'baseline: check "{change.check}" passes more often'
    return f'baseline: check "{change.check}" vanished'


def update_hint(results: RunResults) -> str:
    """The command that records the current state, as the baseline comparison gave it."""
    if results.baseline is not None and results.baseline.update_command:
        return results.baseline.update_command
    return update_command(results.tier)


def describe_filters(plan: Plan) -> str:
    """What narrowed the plan, for "nothing selected" lines."""
    parts = [f"--eval {e}" for e in plan.filters.get("evals", [])]
    parts += [f"--tag {t}" for t in plan.filters.get("tags", [])]
    parts += [f"--experiment {x}" for x in plan.filters.get("experiments", [])]
    parts += [f"--changed-since {r}" for r in plan.filters.get("changed_since", [])]
    parts += [f"--shard {s}" for s in plan.filters.get("shard", [])]
    parts += ["--last-failed" for _ in plan.filters.get("last_failed", [])[:1]]
    if parts:
        return "filters: " + " ".join(parts)
    return "the tier has no evals in the manifest"


# --------------------------------------------------------------------------- repeats: runs, rates, flaky checks


def describe_repeats(result: EvalResult) -> str:
    """``10 of 10 runs, floor 0.8`` (plus ``stopped early`` or ``partial``)."""
    s = result.repeats
    assert s is not None
    text = f"{s.runs} of {s.planned} runs, floor {s.floor:g}"
    if s.stopped_early:
        text += f", stopped early (stop = \"decided\"): rates from {plural(len(s.runs_detail), 'run')}"
    if s.partial:
        text += ", partial: not every run finished"
    return text


def describe_repeated_as_recorded(name: str, count: int) -> str:
    """Why an eval the manifest runs once runs ``count`` times (``evalrun.repeats.repeat_as_recorded``)."""
    return (f"{name}: runs {count} times, as its baseline's pass rates were recorded "
            f"(set repeat = {count} in the manifest to say so there, or pass --repeat N)")


def describe_recorded_nothing(name: str, uses_model: bool, fixtures_for: str | None = None) -> str:
    """Why a t3 eval that ran under ``--record`` left no fixture (``evalrun.run.pipeline``)."""
    if not uses_model:
        owner = fixtures_for or name
        return (f"--record: {name} recorded nothing: it has no model = true, so its model calls (if any) went "
                f"straight to the provider, past evalrun's proxy; set model = true in its [[evals]] entry (or in "
                f"[tiers.t3]), and on the t2 eval that replays them (fixtures_for = \"{owner}\" shares its folder)")
    return (f"--record: {name} recorded nothing: it made no model call through evalrun's proxy; does its client "
            f"read OPENAI_BASE_URL / ANTHROPIC_BASE_URL (or EVALRUN_MODEL_URL), or did it pass a base URL of its own?")


def describe_connection_hint(tier: str, name: str, *, uses_model: bool, recorder: tuple[str, bool] | None,
                             mechanism: str | None, no_model_at: str) -> str | None:
    """What to do about a t1/t2 eval that failed on a connection (``evalrun.run.isolation.explain_connections``).

    An eval without ``model = true`` most often failed on a model call: its model URL variables point at
    ``no_model_at``, where nothing answers; that is named first. ``network = "host"`` is for services on the host.
    """
    urls = "its model URL variables (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, ...)"
    parts = []
    if not uses_model and tier == "t1":
        parts.append(f"t1 makes no model calls: {urls} point at {no_model_at}, where nothing answers; if it calls a "
                     f"model, move it to t2 with model = true (its calls are then replayed from recorded fixtures)")
    elif not uses_model and tier == "t2":
        base = name.split("[", 1)[0]
        if recorder is None:
            how = f'a t3 eval with fixtures_for = "{base}" and model = true writes with `evalrun t3 --record -e <it>`'
        else:
            how = f"`evalrun t3 --record -e {recorder[0]}` writes" + ("" if recorder[1] else " once it has model = true too")
        parts.append(f"{base} has no model = true, so {urls} point at {no_model_at}, where nothing answers: if it "
                     f"calls a model, set model = true in its [[evals]] entry (its calls are then replayed from the "
                     f"fixtures {how})")
    if mechanism is not None:
        scope = "only if" if parts else "if"
        parts.append(f"{tier} is isolated ({mechanism}): {_isolated_reach(tier, mechanism)}; "
                     f'{scope} the eval must reach a service on the host or the network, set network = "host" in '
                     f"[tiers.{tier}] or move it to t3")
    return "; ".join(parts) or None


def _isolated_reach(tier: str, mechanism: str) -> str:
    """What an isolated scorer still reaches, by how it is isolated (``evalrun.run.isolation``, ``evalrun.sandbox``)."""
    if mechanism == "namespace":
        return "nothing outside this run's own loopback is reachable"
    if tier == "t1":
        return "a t1 scorer can open no IP socket"
    return "a t2 scorer connects over TCP only to the replay proxy and the run's own services"


def program_where(spec: Any) -> str:
    """Where an eval's program was looked up (``evalrun.run.execute.program_problem``), and so where to fix it."""
    if "/" in spec.run[0]:
        return f"run[0] is a file relative to {spec.dir}: fix the path, or make it executable"
    return "run[0] is looked up on the PATH its scorer gets: fix the name, or install it"


def rate_line(check: CheckResult) -> str:
    """``"x": 9/10 passed (90%, 95% CI 60-98%), pass@3 1.00, pass^3 0.70`` for summaries."""
    rate = check.rate
    assert rate is not None
    low, high = rate.wilson_95
    pct = f"{rate.passes / rate.runs:.0%}" if rate.runs else "-"
    text = f'"{check.name}": {rate.passes}/{rate.runs} passed ({pct}, 95% CI {low:.0%}-{high:.0%})'
    k = max((int(k) for k in rate.pass_at_k if int(k) <= 3), default=None)
    if k is not None and k > 1:
        text += f", pass@{k} {rate.pass_at_k[str(k)]:.2f}, pass^{k} {rate.pass_hat_k[str(k)]:.2f}"
    if rate.seen < rate.runs:
        text += f", {seen_words(rate.seen, rate.runs, rate.skipped)}"
    return text


def flaky_line(flaky: FlakyCheck) -> str:
    """``agent: check "x" passed 9 of 10 (floor 0.8)``."""
    return f'{flaky.eval}: check "{flaky.check.name}" passed {flaky.rate.passes} of {flaky.rate.runs} (floor {flaky.floor:g})'


# --------------------------------------------------------------------------- models: who answered, what it cost


def format_usd(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"


def describe_cost(cost: Mapping[str, Any]) -> str:
    """``$0.0123`` or ``$0.0123 + 3 unpriced calls (model-x: no price in [models.prices])``."""
    text = format_usd(float(cost.get("usd") or 0))
    note = unpriced_note(cost)
    return f"{text} + {note}" if note else text


def describe_models(result: EvalResult) -> str | None:
    """``agent: openai gpt-4o-mini-2024-07-18, anthropic claude-…, 6 calls, 1234 tokens (replay)`` for the summary."""
    m = result.models
    if not m or not m.get("calls"):
        return None
    return _describe_answers(result.name, m) + _describe_extras(m)


def _describe_extras(m: dict[str, Any]) -> str:
    """``; judge: gpt-4o-mini-…, 1 call; cost $0.0012`` after an eval's models line."""
    text = ""
    judge = m.get("judge")
    if isinstance(judge, dict) and judge.get("calls"):
        text += f"; judge: {', '.join(judge.get('models') or []) or 'no model named'}, {plural(judge['calls'], 'call')}"
    if isinstance(m.get("cost"), dict):
        text += f"; cost {describe_cost(m['cost'])}"
    return text


def _describe_answers(name: str, m: dict[str, Any]) -> str:
    by_provider = m.get("by_provider") or {}
    tokens = f"{(m.get('tokens') or {}).get('total', 0)} tokens"
    if m.get("uncounted_calls"):  # never shown as free: streams that reported no usage
        tokens += f" + {plural(m['uncounted_calls'], 'uncounted call')}"
    if by_provider:  # each model after the provider that answered with it
        models = ", ".join(f"{provider} {model}" for provider, names in by_provider.items() for model in names)
        return f"{name}: {models}, {plural(m['calls'], 'call')}, {tokens} ({m.get('mode')})"
    models = ", ".join(m.get("models") or []) or "no model named"
    return f"{name}: {m.get('provider') or 'unknown provider'} {models}, {plural(m['calls'], 'call')}, {tokens} ({m.get('mode')})"


# --------------------------------------------------------------------------- judges


def calibration_lines(cal: JudgeCalibration) -> list[str]:
    """A judge's agreement with people on its anchors, and the judged pass rate corrected for it."""
    judge = cal.judge.replace("#", " (rubric ") + ")" if cal.judge else "the judge"
    agreed = cal.both_pass + cal.both_fail
    rates = ", ".join(
        f"{label} {value:.2f}" for label, value in (
            ("TPR", cal.true_positive_rate), ("TNR", cal.true_negative_rate), ("kappa", cal.kappa), ("AC1", cal.ac1),
        ) if value is not None
    )
    lines = [f"judge {judge}: agrees with people on {agreed} of {cal.anchors} anchors ({cal.eval}): {rates or 'no rates'}"]
    if cal.kappa is None:
        lines.append("  kappa is undefined: every anchor got the same verdict; add anchors of the other kind")
    if cal.disagree:
        lines.append(
            f"  kappa and AC1 disagree ({cal.kappa:.2f} vs {cal.ac1:.2f}): the anchors are unbalanced; "
            "add anchors of the rarer verdict before trusting either"
        )
    if cal.below:
        lines.append(f"  below its floor: {'; '.join(cal.below)} ({cal.eval} fails)")
    if cal.judged_checks:
        text = f"  judged checks: {cal.judged_passes} of {cal.judged_checks} pass ({cal.judged_passes / cal.judged_checks:.0%})"
        if cal.corrected is not None:
            est, low, high = cal.corrected
            text += f"; corrected for the judge's errors {est:.0%} (95% CI {low:.0%}-{high:.0%})"
        else:
            text += "; no correction: the judge is no better than chance on its anchors"
        lines.append(text)
    return lines


def network_exception(network: NetworkIsolation) -> str | None:
    """What an isolated run still reaches: a unix socket bound to a path is reached through the filesystem from
    any namespace, and without Landlock's scopes (``seccomp`` alone) an abstract one too."""
    if not network.isolated:
        return None
    return "unix sockets" if network.mechanism == "seccomp" else "unix sockets bound to a path"


def network_line(network: NetworkIsolation) -> str:
    """``network: isolated (namespace), except unix sockets bound to a path`` / ``network: not isolated: <why>``:
    the run's header, and the same words in the step summary, Markdown and the HTML report."""
    if not network.isolated:
        return f"network: not isolated: {network.reason or 'unknown'}"
    return f"network: isolated ({network.mechanism}), except {network_exception(network)}"


def stored_network_line(network: Mapping[str, Any] | None) -> str | None:
    """A stored run's ``network`` (the history's column) as its header line printed it; None: unknown or unreadable."""
    if not network:
        return None
    try:
        return network_line(validate_network(dict(network)))
    except ValueError:
        return None


def describe_budget(budget: Budget | None) -> str:
    """``at most 50 calls, 100,000 tokens, 2.5 USD``, or ``none`` (``evalrun dry``)."""
    parts = []
    if budget is not None:
        if budget.calls is not None:
            parts.append(plural(budget.calls, "call"))
        if budget.tokens is not None:
            parts.append(f"{budget.tokens:,} tokens")
        if budget.usd is not None:
            parts.append(f"{budget.usd:g} USD")
    return "at most " + ", ".join(parts) if parts else "none"
