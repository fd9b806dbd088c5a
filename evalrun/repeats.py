"""Repeats of an eval and the pass rates they give.

This module owns what ``repeat = N`` means for a run: each planned eval becomes
N runs (``PlannedEval.repeat`` = its ``EVALRUN_REPEAT``), scheduled in rounds
(every eval's run 0, then every eval's run 1, ...), so that an early stop
learns from every eval at once and a tier budget that runs out leaves every
eval some runs instead of some evals none. It decides when an eval's verdict
can no longer change (``stop = "decided"``), and it folds an eval's runs into
one ``EvalResult`` whose checks carry their pass rate (``CheckResult.rate``),
judged against the floor ``min_pass_rate``: below it the check fails, at or
above it but not passed every time the check is *flaky* (the eval passes, and
says so). The statistics are ``evalrun.stats``. The tests the scorer's reports
skipped (``EvalResult.skipped_tests``) are kept, each once, saying where the
runs disagree (``fold_skipped_tests``).

An eval that does not repeat (N = 1) passes through unchanged.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any, NamedTuple

from evalrun.manifest import EvalSpec, Manifest
from evalrun.plan import PlannedEval
from evalrun.results import CheckRate, CheckResult, EvalResult, RepeatSummary, RepeatRun, SkippedTest, Status
from evalrun.text import MESSAGE_LIMIT, plural, seen_words, shorten, truncate

DEFAULT_FLOOR = 1.0
DEFAULT_ALPHA = 0.05
EARLY_STOP_MESSAGE = 'not run: the verdict was already decided (stop = "decided")'
K_VALUES = (1, 3, 5, 10)  # pass@k and pass^k are reported for these k (those <= runs)
_EVIDENCE_RUNS = 10  # failing runs' messages kept in a check's evidence
_EVIDENCE_CHARS = 4000
_SKIP_REASONS_SHOWN = 3  # distinct reasons named for one skipped test; the rest are counted
_SKIP_REASON_CHARS = 200  # as a single run's skip reason


class RepeatSettings(NamedTuple):
    """How often an eval runs and how its pass rates are judged."""

    count: int = 1
    floor: float = DEFAULT_FLOOR  # min_pass_rate
    stop: str | None = None  # "decided": stop once no run can change a verdict
    alpha: float = DEFAULT_ALPHA  # significance of the baseline's rate comparison
    too_little_data: str = "note"  # "fail": a rate comparison with too little data to tell is exit 4

    @property
    def repeats(self) -> bool:
        return self.count > 1

    def required(self, runs: int) -> int:
        """Passes out of ``runs`` that meet the floor; exact, so 0.7 of 10 is 7, not 7.000000000000001."""
        return math.ceil(Fraction(repr(self.floor)) * runs)


def settings_for(manifest: Manifest, spec: EvalSpec, repeat_override: int | None = None) -> RepeatSettings:
    """The eval's own keys, else its tier's, else the defaults; ``--repeat N`` overrides the count."""
    tier = manifest.tier(spec.tier)

    def pick(key: str, default: Any) -> Any:
        value = getattr(spec, key)
        if value is None:
            value = getattr(tier, key)
        return default if value is None else value

    count = repeat_override if repeat_override is not None else pick("repeat", 1)
    return RepeatSettings(
        count=count, floor=pick("min_pass_rate", DEFAULT_FLOOR), stop=pick("stop", None), alpha=pick("alpha", DEFAULT_ALPHA),
        too_little_data=pick("too_little_data", "note"),
    )


def plan_settings(manifest: Manifest, planned: Sequence[PlannedEval], repeat_override: int | None) -> dict[str, RepeatSettings]:
    return {p.name: settings_for(manifest, p.spec, repeat_override) for p in planned}


def repeat_as_recorded(
    settings: Mapping[str, RepeatSettings], recorded: Mapping[str, Mapping[str, int]] | None, repeat_override: int | None,
) -> tuple[dict[str, RepeatSettings], dict[str, int]]:
    """Settings where an eval the manifest runs once repeats as often as its baseline's pass rates were recorded.

    A baseline of ``{ passes = 4, runs = 5 }`` compares rates over five runs; one
    run would flip the gate on a check that fails a fifth of the time. ``--repeat N``
    still decides. Second: each eval so repeated, with its count (the run says so:
    ``evalrun.reports_out.describe.describe_repeated_as_recorded``).
    """
    out: dict[str, RepeatSettings] = dict(settings)
    notes: dict[str, int] = {}
    if repeat_override is not None or not recorded:
        return out, notes
    for name, chosen in settings.items():
        runs = [getattr(c, "runs", 0) for c in (recorded.get(name) or {}).values()]
        most = max(runs, default=0)
        if chosen.repeats or most <= 1:
            continue
        out[name] = chosen._replace(count=most)
        notes[name] = most
    return out, notes


def expand(planned: Sequence[PlannedEval], settings: Mapping[str, RepeatSettings]) -> list[PlannedEval]:
    """Every run of every planned eval, in rounds: all run 0s, then all run 1s, ..."""
    rounds = max((settings[p.name].count for p in planned), default=0)
    return [p._replace(repeat=k) for k in range(rounds) for p in planned if k < settings[p.name].count]


# --------------------------------------------------------------------------- while the runs go


class RepeatTracker:
    """Collects runs as they finish (any worker thread): decides early stops, shows each repeated eval once."""

    def __init__(
        self,
        planned: Sequence[PlannedEval],
        settings: Mapping[str, RepeatSettings],
        tier: str,
        on_eval_done: Callable[[EvalResult], None] | None = None,
    ) -> None:
        self._planned = {p.name: p for p in planned}
        self._settings = settings
        self._tier = tier
        self._on_eval_done = on_eval_done
        self._lock = threading.Lock()
        self._runs: dict[str, dict[int, EvalResult]] = {}
        self._decided: set[str] = set()

    def repeats(self, name: str) -> bool:
        return self._settings[name].repeats

    def stopped(self, planned: PlannedEval) -> bool:
        """True when this run need not start: its eval opted in to early stop and is decided."""
        with self._lock:
            return planned.name in self._decided

    def record(self, planned: PlannedEval, result: EvalResult) -> EvalResult:
        """Note one finished run (a ``finalize`` hook); returns it unchanged."""
        settings = self._settings[planned.name]
        if not settings.repeats:
            return result
        with self._lock:
            runs = self._runs.setdefault(planned.name, {})
            runs[planned.repeat] = result
            complete = len(runs) == settings.count
            if settings.stop == "decided" and not complete and planned.name not in self._decided:
                if is_decided([runs[k] for k in sorted(runs)], settings):
                    self._decided.add(planned.name)
            ordered = [runs[k] for k in sorted(runs)] if complete else None
        if ordered is not None and self._on_eval_done is not None:
            self._on_eval_done(aggregate(self._planned[planned.name], self._tier, settings, ordered))
        return result


def is_decided(runs: Sequence[EvalResult], settings: RepeatSettings) -> bool:
    """Whether the remaining runs can no longer change any check's verdict (nor the eval's)."""
    made = [r for r in runs if not _early_skipped(r)]
    if any(_broken(r) or r.status is not Status.PASSED and r.status is not Status.FAILED for r in made):
        return True  # an error, a timeout, a skip, the budget: the eval's verdict does not depend on more runs
    required = settings.required(settings.count)
    remaining = settings.count - len(made)
    verdicts = []
    passed: dict[str, int] = {}
    for r in made:
        for c in r.checks:
            passed[c.name] = passed.get(c.name, 0) + (1 if c.passed else 0)
    for name in _check_names(made):
        passes = passed[name]
        if passes + remaining < required:
            return True  # this check fails the floor whatever comes: the eval fails
        verdicts.append(passes >= required)
    return bool(verdicts) and all(verdicts)


# --------------------------------------------------------------------------- folding runs into one result


def aggregate_all(
    planned: Sequence[PlannedEval],
    runs: Sequence[PlannedEval],
    results: Sequence[EvalResult],
    settings: Mapping[str, RepeatSettings],
    tier: str,
) -> list[EvalResult]:
    """One result per planned eval, in plan order, from the results of ``runs`` (same order as ``runs``)."""
    grouped: dict[str, dict[int, EvalResult]] = {p.name: {} for p in planned}
    for run, result in zip(runs, results):
        grouped[run.name][run.repeat] = result
    out: list[EvalResult] = []
    for p in planned:
        got = grouped[p.name]
        if not settings[p.name].repeats:
            if 0 in got:
                out.append(got[0])
            continue
        ordered = [got.get(k) or interrupted_result(p, tier) for k in range(settings[p.name].count)]
        out.append(aggregate(p, tier, settings[p.name], ordered))
    return out


def aggregate(planned: PlannedEval, tier: str, settings: RepeatSettings, runs: Sequence[EvalResult]) -> EvalResult:
    """Fold an eval's runs (index = ``EVALRUN_REPEAT``) into its one result, judged against the floor."""
    n = settings.count
    made = [(k, r) for k, r in enumerate(runs) if not _early_skipped(r)]
    stopped_early = len(made) < len(runs)
    reported = [(k, r) for k, r in made if r.status in (Status.PASSED, Status.FAILED) and not _broken(r)]
    summary = RepeatSummary(
        planned=n,
        runs=len(reported),
        floor=settings.floor,
        alpha=settings.alpha,
        too_little_data=settings.too_little_data,
        stop=settings.stop,
        stopped_early=stopped_early,
        runs_detail=[
            RepeatRun(repeat=k, status=r.status, duration_s=r.duration_s, exit_code=r.exit_code, message=r.message)
            for k, r in made
        ],
    )
    base: dict[str, Any] = dict(
        name=planned.name,
        experiment=planned.experiment,
        tier=tier,
        dir=planned.spec.dir,
        duration_s=round(sum(r.duration_s for _, r in made), 4),
        models=_sum_models([r for _, r in made]),
    )
    checks = _rate_checks(reported, settings, n if stopped_early else len(reported))
    flaky = [c.name for c in checks if c.rate is not None and c.rate.flaky]
    below = [c.name for c in checks if not c.passed]
    summary = replace(summary, flaky=flaky, below_floor=below)
    first = reported[0][1] if reported else (made[0][1] if made else runs[0])
    base.update(metrics=first.metrics, exit_code=first.exit_code)

    unfinished = [(k, r) for k, r in made if r.status in (Status.INTERRUPTED, Status.BUDGET)]
    broken = [(k, r) for k, r in made if _broken(r)]
    skipped = [(k, r) for k, r in made if r.status is Status.SKIPPED]
    base["skipped_tests"] = fold_skipped_tests([r for _, r in reported] or [r for _, r in skipped])
    if broken:  # a crash, a timeout or a runner rule is never noise: the eval takes that run's verdict
        k, r = broken[0]
        return EvalResult(
            status=r.status, message=f"run {k + 1} of {n}: {r.message}", checks=checks, output_tail=r.output_tail,
            repeats=summary, **{**base, "exit_code": r.exit_code},
        )
    if unfinished:  # the rates of the runs that finished, never compared as complete
        k, r = unfinished[0]
        partial = replace(summary, partial=True)
        message = f"{r.message} (after {len(reported)} of {n} runs; rates are partial)"
        return EvalResult(status=r.status, message=message, checks=checks, repeats=partial, **base)
    if skipped and not reported:
        return EvalResult(status=Status.SKIPPED, message=skipped[0][1].message, repeats=summary, **base)
    notes = []
    if below:
        notes += [_floor_words(c, settings.floor, n, outcomes=True) for c in checks if not c.passed]
    if flaky:
        notes.append("flaky: " + "; ".join(_floor_words(c, settings.floor, n) for c in checks if c.name in flaky))
    if stopped_early:
        notes.append(f"stopped early after {len(made)} of {n} runs: the verdict was decided")
    if base["skipped_tests"]:  # as a single run's "skipped in TAP: ..." note: what was not checked, loudly
        notes.append(shorten("tests skipped: " + "; ".join(
            f"{t.name} ({t.reason})" if t.reason else t.name for t in base["skipped_tests"]), MESSAGE_LIMIT))
    status = Status.FAILED if below else Status.PASSED
    failing = next((r for _, r in reported if r.status is Status.FAILED), None)
    return EvalResult(
        status=status,
        message="; ".join(notes) or None,
        checks=checks,
        output_tail=failing.output_tail if failing is not None and below else "",
        repeats=summary,
        **base,
    )


def fold_skipped_tests(runs: Sequence[EvalResult]) -> list[SkippedTest]:
    """The tests the runs' reports skipped, each once, in the order first seen (run by run).

    A test skipped in every run for one reason keeps that reason, as in a single
    run. Where the runs disagree (skipped in some runs only, or for different
    reasons) the reason says how often each one was given:
    ``no gpu in 2 of 3 runs, driver too old in 1 of 3 runs``; ``too slow in 1 of
    3 runs`` (it ran in the other two, as a check).
    """
    total = len(runs)
    counts: dict[str, dict[str, int]] = {}
    for run in runs:
        seen: set[tuple[str, str]] = set()  # a name listed twice in one report counts once for that run
        for test in run.skipped_tests:
            if (test.name, test.reason) in seen:
                continue
            seen.add((test.name, test.reason))
            reasons = counts.setdefault(test.name, {})
            reasons[test.reason] = reasons.get(test.reason, 0) + 1
    out: list[SkippedTest] = []
    for name, reasons in counts.items():
        if len(reasons) == 1 and next(iter(reasons.values())) >= total:
            out.append(SkippedTest(name=name, reason=next(iter(reasons))))
            continue
        shown = list(reasons.items())[:_SKIP_REASONS_SHOWN]
        words = [f"{reason or 'skipped'} in {count} of {total} runs" for reason, count in shown]
        if len(reasons) > len(shown):
            words.append(plural(len(reasons) - len(shown), "other reason"))
        out.append(SkippedTest(name=name, reason=shorten(", ".join(words), _SKIP_REASON_CHARS)))
    return out


def _rate_checks(reported: Sequence[tuple[int, EvalResult]], settings: RepeatSettings, judged_over: int) -> list[CheckResult]:
    """Each check's rate over the reported runs; ``judged_over`` runs decide the floor (the planned
    count after an early stop, where the stop already proved the verdict)."""
    from evalrun.stats import pass_at_k, pass_hat_k, wilson_interval  # repeated evals only

    runs = len(reported)
    required = settings.required(judged_over)
    remaining = judged_over - runs
    out: list[CheckResult] = []
    by_name = [(k, {c.name: c for c in r.checks}) for k, r in reported]  # one lookup per check and run
    # A run without the check whose report skipped its test by name: still not passed there (a skip is never a
    # pass), but said as what it was, a skip and its reason, not a check that went missing.
    skips = {k: {t.name: t.reason for t in r.skipped_tests} for k, r in reported}
    for name in _check_names([r for _, r in reported]):
        seen = passes = skipped = 0
        assertions: int | None = None
        failed: list[int] = []
        evidence: list[str] = []
        first_message: str | None = None
        judge: str | None = None
        for k, checks in by_name:
            check = checks.get(name)
            if check is not None:
                seen += 1
                judge = judge or check.judge
                assertions = check.assertions if assertions is None else min(assertions, check.assertions)
            if check is not None and check.passed:
                passes += 1
                continue
            failed.append(k)
            if check is not None:
                why = check.message or "failed"
            elif (reason := skips[k].get(name)) is not None:
                skipped += 1
                why = f"skipped in this run's report ({reason})" if reason else "skipped in this run's report"
            else:
                why = "absent from this run's report"
            first_message = first_message or why
            if len(evidence) < _EVIDENCE_RUNS:
                evidence.append(f"run {k + 1} (EVALRUN_REPEAT={k}): {why}")
        # After an early stop a check not yet decided (another one decided the eval) is not called below the floor.
        ok = passes + max(remaining, 0) >= required
        ks = [k for k in K_VALUES if k <= runs]
        rate = CheckRate(
            runs=runs,
            passes=passes,
            seen=seen,
            skipped=skipped,
            pass_at_k={str(k): round(pass_at_k(runs, passes, k), 6) for k in ks},
            pass_hat_k={str(k): round(pass_hat_k(runs, passes, k), 6) for k in ks},
            wilson_95=tuple(round(x, 6) for x in wilson_interval(passes, runs)),  # type: ignore[arg-type]
            flaky=ok and passes < runs,
            failed_runs=failed,
        )
        words = f"passed {passes} of {runs} (floor {settings.floor:g})"
        if seen < runs:
            words += f"; {seen_words(seen, runs, skipped)}"
        message = None if passes == runs else (words + (f": {first_message}" if first_message and not ok else ""))
        out.append(
            CheckResult(
                name=name,
                assertions=assertions or 0,
                passed=ok,
                message=message,
                evidence=truncate("\n".join(evidence), _EVIDENCE_CHARS) if evidence else None,
                rate=rate,
                judge=judge,
            )
        )
    return out


PASSED_RUN, FAILED_RUN = "●", "○"  # a repeated check's outcomes, run by run; the terminal falls back to + and -


def outcome_marks(rate: CheckRate) -> str:
    """``●●○●●``: each run of a repeated check in order, ● passed, ○ not."""
    failed = set(rate.failed_runs)
    return "".join(FAILED_RUN if k in failed else PASSED_RUN for k in range(rate.runs))


def _floor_words(check: CheckResult, floor: float, planned: int, outcomes: bool = False) -> str:
    assert check.rate is not None
    rate = check.rate
    if outcomes and rate.runs and len(rate.failed_runs) <= rate.runs:
        text = _floor_words(check, floor, planned)
        return f"{text} {outcome_marks(rate)}"
    text = f'check "{check.name}" passed {rate.passes} of {rate.runs} (floor {floor:g})'
    if rate.runs < planned and not check.passed:  # stopped early: say why no later run could have saved it
        text = (f'check "{check.name}" passed {rate.passes} of {rate.runs} (floor {floor:g}: at most '
                f"{rate.passes + planned - rate.runs} of {planned} could pass)")
    if check.rate.seen < check.rate.runs:
        text += f", {seen_words(check.rate.seen, check.rate.runs, check.rate.skipped)}"
    return text


def _check_names(runs: Sequence[EvalResult]) -> list[str]:
    names: dict[str, None] = {}
    for r in runs:
        for c in r.checks:
            names.setdefault(c.name, None)
    return list(names)


def _broken(result: EvalResult) -> bool:
    """A run that failed as a whole (crash, timeout, runner rule), not through a failed check."""
    if result.status in (Status.ERROR, Status.TIMEOUT):
        return True
    return result.status is Status.FAILED and all(c.passed for c in result.checks)


def _early_skipped(result: EvalResult) -> bool:
    return result.status is Status.SKIPPED and result.message == EARLY_STOP_MESSAGE


def interrupted_result(planned: PlannedEval, tier: str) -> EvalResult:
    """The record of a planned run that Ctrl-C kept from running."""
    return EvalResult(name=planned.name, experiment=planned.experiment, tier=tier, dir=planned.spec.dir,
                      status=Status.INTERRUPTED, message="not run: interrupted")


def _sum_models(runs: Sequence[EvalResult]) -> dict[str, Any] | None:
    records = [r.models for r in runs if r.models]
    if not records:
        return None
    tokens = {key: sum((m.get("tokens") or {}).get(key, 0) for m in records) for key in ("input", "output", "total")}
    return {
        "mode": records[0].get("mode"),
        "provider": records[0].get("provider"),
        "models": sorted({name for m in records for name in m.get("models") or []}),
        "calls": sum(m.get("calls") or 0 for m in records),
        "tokens": tokens,
        # Every run's calls in order, each marked with its run (1-based), within the log's bound.
        **_call_logs(records),
    }


def _call_logs(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    from evalrun.models.transcript import MAX_CALLS

    calls = [{**c, "run": k + 1} for k, m in enumerate(records) for c in m.get("call_log") or []]
    dropped = sum(m.get("calls_not_kept") or 0 for m in records) + max(0, len(calls) - MAX_CALLS)
    return {**({"call_log": calls[:MAX_CALLS]} if calls else {}), **({"calls_not_kept": dropped} if dropped else {})}


# --------------------------------------------------------------------------- what the summaries list


class FlakyCheck(NamedTuple):
    """A repeated eval's check that met its floor without passing every run (worded by ``evalrun.reports_out``)."""

    eval: str
    check: CheckResult
    floor: float

    @property
    def rate(self) -> CheckRate:
        assert self.check.rate is not None
        return self.check.rate


def flaky_checks(results: Sequence[EvalResult]) -> list[FlakyCheck]:
    """Every flaky check of the run, in result and report order: listed loudly, never silent."""
    return [
        FlakyCheck(eval=r.name, check=c, floor=r.repeats.floor)
        for r in results
        if r.repeats is not None
        for c in r.checks
        if c.rate is not None and c.rate.flaky
    ]
