"""How a run differs from its tier's baseline: the regressions, the stale entries, what was not compared.

``compare_to_baseline`` diffs check names and assertion counts (and, through
``rates``, ``settings`` and ``judges``, pass rates, gate settings and who
judged) and returns a ``BaselineComparison``: plain data, worded for the
terminal by ``evalrun.reports_out.baseline_text``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from evalrun.baseline.judges import diff_judges
from evalrun.baseline.rates import diff_rates
from evalrun.baseline.settings import GateSettings, diff_settings, gate_settings, tier_move
from evalrun.text import plural, quote
from evalrun.baseline.store import baseline_path
from evalrun.errors import file_label
from evalrun.manifest import TIERS, Manifest
from evalrun.plan import tier_cells
from evalrun.results import BaselineChange, BaselineComparison, EvalResult, RunResults, Status

# Only these statuses mean the scorer produced a report whose checks can be
# compared; everything else was not checked (or crashed) and is listed instead.
_COMPARED = (Status.PASSED, Status.FAILED)


def compare_tier(
    manifest: Manifest,
    results: RunResults,
    baseline: Mapping[str, Mapping[str, int]] | None,
    *,
    strict: bool,
    update_command: str,
    counts: Mapping[str, Mapping[str, int]] | None = None,
) -> BaselineComparison:
    """Compare results with their tier's baseline as every command does: the tier's evals
    of the manifest, its baseline file, and the manifest's ``[baseline] strict`` too."""
    tier = results.tier
    moved = {name: other for other in TIERS if other != tier for name in tier_cells(manifest, other)}
    comparison = compare_to_baseline(
        baseline,
        results,
        set(tier_cells(manifest, tier)),
        baseline_path(manifest, tier),
        strict=strict or manifest.baseline.strict,
        update_command=update_command,
        counts=counts,
        settings=gate_settings(manifest, tier),
        moved=moved,
    )
    if baseline is None and (elsewhere := baseline_elsewhere(manifest, tier)) is not None:
        comparison.regressions.insert(0, BaselineChange(
            eval=tier, check=None, kind="baseline-elsewhere", message=(
                f"no baseline at {comparison.path}, but {file_label(elsewhere)} holds one: [baseline] dir was moved "
                f"away from it, and nothing it records would be compared; move the file to {comparison.path} "
                f"(or set dir back)")))
    return comparison


def baseline_elsewhere(manifest: Manifest, tier: str) -> Path | None:
    """The tier's baseline in the default folder when ``[baseline] dir`` points elsewhere and has none.

    A dir moved to an empty folder would otherwise open the gate: every check it no
    longer sees would pass as new (docs/baseline.md)."""
    default = manifest.root / "baselines" / f"{tier}.toml"
    here = baseline_path(manifest, tier)
    try:
        if here.resolve() == default.resolve() or here.exists() or not default.is_file():
            return None
    except OSError:
        return None
    return default


def compare_to_baseline(
    baseline: Mapping[str, Mapping[str, int]] | None,
    results: RunResults,
    tier_eval_names: set[str],
    path: Path,
    strict: bool,
    update_command: str,
    counts: Mapping[str, Mapping[str, int]] | None = None,
    settings: Mapping[str, GateSettings] | None = None,
    moved: Mapping[str, str] | None = None,
) -> BaselineComparison:
    """Diff a run against its tier's baseline.

    ``tier_eval_names`` is every eval of the tier in the manifest, filtered or
    not: a baselined eval missing from it vanished, whatever the filters.
    Only evals whose scorer ran and produced a report (passed or failed) are
    compared; the rest of the tier, including an eval failed before its scorer
    started (a service down, a skip turned failure), is listed in
    ``not_compared``. ``strict`` turns a stale baseline into regressions.
    ``counts`` (from ``load_results_counted``) stands for the checks of the
    evals it names, whose records were not built. ``settings``: the gate
    settings the manifest makes now, compared with the recorded ones (when
    None, none are compared); ``moved``: the tier each eval of another tier is
    in, so a vanished eval that moved says where, and moving to a stricter tier
    is no regression.
    """
    def counts_of_eval(result: EvalResult) -> Mapping[str, int]:
        if counts is not None and result.name in counts:
            return counts[result.name]
        return result.check_counts()

    compared: dict[str, EvalResult] = {}
    not_compared: set[str] = set()
    for result in results.evals:
        if result.status in _COMPARED and not failed_before_scorer(result):
            compared[result.name] = result
        else:
            not_compared.add(result.name)
    in_results = {result.name for result in results.evals}
    not_compared.update(name for name in tier_eval_names if name not in in_results)

    regressions: list[BaselineChange] = []
    stale: list[BaselineChange] = []
    undecided: list[BaselineChange] = []
    known = baseline if baseline is not None else {}
    tier = path.stem
    rejudged = diff_judges(getattr(baseline, "judges", None), compared,
                           sorted(n for n in known if n in compared), stale)
    for name, recorded in known.items():
        if name not in tier_eval_names:
            elsewhere = (moved or {}).get(name)
            if elsewhere is None:
                regressions.append(_vanished_eval(name, recorded))
            else:
                looser, words = tier_move(name, tier, elsewhere)
                change = _change(name, None, "moved-looser" if looser else "moved-stricter", sum(recorded.values()),
                                 None, f"{words} (baseline of {tier}: {plural(len(recorded), 'check')})")
                (regressions if looser else stale).append(change)
            not_compared.discard(name)
        elif name in compared:
            _diff_eval(name, recorded, counts_of_eval(compared[name]), regressions, stale)
            # A check judged by another judge than recorded is not compared by pass rate (evalrun.baseline.judges).
            unjudgeable = {c.name for c in compared[name].checks if c.judge} if name in rejudged else set()
            diff_rates(name, recorded, compared[name], regressions, stale, undecided, skip=unjudgeable)
    for name, result in compared.items():
        if name not in known:
            stale.append(_new_eval(name, counts_of_eval(result)))
    if settings is not None and baseline is not None:
        recorded_settings = getattr(baseline, "settings", None)
        diff_settings(recorded_settings, settings, sorted(n for n in known if n in in_results and n in tier_eval_names),
                      regressions, stale)

    if strict:
        regressions.extend(stale)
        stale = []
    return BaselineComparison(
        path=file_label(path),
        exists=baseline is not None,
        regressions=sorted(regressions, key=_order),
        stale=sorted(stale, key=_order),
        undecided=sorted(undecided, key=_order),
        not_compared=sorted(not_compared),
        strict=strict,
        update_command=update_command,
    )


def failed_before_scorer(result: EvalResult) -> bool:
    """Whether the eval failed before its scorer started, so it has no checks to diff.

    That is a failure decided by the run itself (a service that did not start,
    ``skips = "fail"``): no scorer process, so ``exit_code`` is None (see
    ``evalrun.process.ProcessOutcome``) and there is no report.
    """
    return result.status is Status.FAILED and result.exit_code is None and not result.checks


def _diff_eval(
    name: str,
    old: Mapping[str, int],
    new: Mapping[str, int],
    regressions: list[BaselineChange],
    stale: list[BaselineChange],
) -> None:
    if old == new:
        return  # the common case, decided at C speed: nothing changed
    for check, before in old.items():
        now = new.get(check)
        if now is None:
            regressions.append(
                _change(name, check, "vanished-check", before, None,
                        f"{name}: check {quote(check)} vanished (baseline: {plural(before, 'assertion')})")
            )
        elif now < before:
            regressions.append(
                _change(name, check, "weakened", before, now,
                        f"{name}: check {quote(check)} asserts {now} (baseline: {before})")
            )
        elif now > before:
            stale.append(
                _change(name, check, "stronger", before, now,
                        f"{name}: check {quote(check)} asserts {now} (baseline: {before})")
            )
    for check, now in new.items():
        if check not in old:
            stale.append(
                _change(name, check, "new-check", None, now,
                        f"{name}: new check {quote(check)} ({plural(now, 'assertion')})")
            )


def _vanished_eval(name: str, counts: Mapping[str, int]) -> BaselineChange:
    total = sum(counts.values())
    return _change(
        name, None, "vanished-eval", total, None,
        f"{name}: eval vanished from the manifest (baseline: {plural(len(counts), 'check')}, {plural(total, 'assertion')})",
    )


def _new_eval(name: str, counts: Mapping[str, int]) -> BaselineChange:
    total = sum(counts.values())
    return _change(
        name, None, "new-eval", None, total,
        f"{name}: new eval, not in the baseline ({plural(len(counts), 'check')}, {plural(total, 'assertion')})",
    )


def _change(eval_name: str, check: str | None, kind: str, baseline: int | None, current: int | None,
            message: str) -> BaselineChange:
    return BaselineChange(eval=eval_name, check=check, kind=kind, baseline=baseline, current=current,
                          message=message)


def _order(change: BaselineChange) -> tuple[str, int, str]:
    # Eval-level changes (check None) sort before that eval's checks.
    return (change.eval, 0 if change.check is None else 1, change.check or "")
