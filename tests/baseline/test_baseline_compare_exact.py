"""The baseline comparison's decisions, pinned exactly: every kind, every boundary, every message.

Each test names the change a mutant of ``compare_to_baseline`` / ``_diff_eval``
would make (a count one below, at, or one above the baseline; a status at the
edge of "compared"), so ``bench/mutate.py --functions`` finds it killed.
"""

from __future__ import annotations

from pathlib import Path

from evalrun.baseline import Baseline, compare_tier, compare_to_baseline, failed_before_scorer
from evalrun.baseline.settings import GateSettings
from evalrun.manifest import load_manifest
from evalrun.results import CheckResult, EvalResult, RunResults, Status
from harness import an_eval, manifest

PATH = Path("baselines/t1.toml")
UPDATE = "evalrun baseline --update t1"


def _eval(name: str, status: Status = Status.PASSED, exit_code: int | None = 0, **checks: int) -> EvalResult:
    return EvalResult(name=name, tier="t1", dir=f"evals/{name}", status=status, exit_code=exit_code,
                      checks=[CheckResult(name=c, assertions=n, passed=True) for c, n in checks.items()])


def _run(*evals: EvalResult) -> RunResults:
    return RunResults(evalrun_version="0", tier="t1", manifest="manifest.toml", started_at="2024-01-01T00:00:00Z",
                      evals=list(evals))


def _compare(baseline, *evals, names=None, strict=False, **kw):
    names = {e.name for e in evals} if names is None else set(names)
    return compare_to_baseline(baseline, _run(*evals), names, PATH, strict, UPDATE, **kw)


def _lines(changes) -> list[tuple]:
    return [(c.eval, c.check, c.kind, c.baseline, c.current, c.message) for c in changes]


# --- one eval's checks -----------------------------------------------------------


def test_a_count_one_below_the_baseline_is_weakened_at_it_nothing_one_above_stronger() -> None:
    result = _compare({"a": {"below": 3, "at": 3, "above": 3}}, _eval("a", below=2, at=3, above=4))
    assert _lines(result.regressions) == [
        ("a", "below", "weakened", 3, 2, 'a: check "below" asserts 2 (baseline: 3)'),
    ]
    assert _lines(result.stale) == [("a", "above", "stronger", 3, 4, 'a: check "above" asserts 4 (baseline: 3)')]
    assert result.undecided == [] and result.not_compared == [] and result.exists is True


def test_vanished_and_new_checks_with_their_counts_in_words() -> None:
    result = _compare({"a": {"gone1": 1, "gone2": 2, "kept": 1}}, _eval("a", kept=1, new1=1, new2=2))
    assert _lines(result.regressions) == [
        ("a", "gone1", "vanished-check", 1, None, 'a: check "gone1" vanished (baseline: 1 assertion)'),
        ("a", "gone2", "vanished-check", 2, None, 'a: check "gone2" vanished (baseline: 2 assertions)'),
    ]
    assert _lines(result.stale) == [
        ("a", "new1", "new-check", None, 1, 'a: new check "new1" (1 assertion)'),
        ("a", "new2", "new-check", None, 2, 'a: new check "new2" (2 assertions)'),
    ]


def test_a_zero_count_check_that_vanished_is_still_a_regression() -> None:
    # "now is None", not "not now": a baselined 0 that is now absent vanished; one still there at 0 is unchanged
    result = _compare({"a": {"zero": 0, "kept": 0}}, _eval("a", kept=0, other=1))
    assert _lines(result.regressions) == [
        ("a", "zero", "vanished-check", 0, None, 'a: check "zero" vanished (baseline: 0 assertions)'),
    ]
    assert [c.kind for c in result.stale] == ["new-check"]


def test_unchanged_eval_has_no_changes() -> None:
    result = _compare({"a": {"x": 2, "y": 1}}, _eval("a", y=1, x=2))
    assert (result.regressions, result.stale, result.undecided, result.not_compared) == ([], [], [], [])
    assert (result.path, result.exists, result.strict, result.update_command) == (
        "baselines/t1.toml", True, False, UPDATE)


def test_names_are_quoted_as_json() -> None:
    result = _compare({"a": {'say "hi"\n': 2}}, _eval("a"))
    assert result.regressions[0].message == 'a: check "say \\"hi\\"\\n" vanished (baseline: 2 assertions)'


# --- whole evals -----------------------------------------------------------------


def test_a_vanished_eval_sums_its_checks() -> None:
    result = _compare({"gone": {"x": 2, "y": 3}, "one": {"x": 1}}, names=[])
    assert _lines(result.regressions) == [
        ("gone", None, "vanished-eval", 5, None,
         "gone: eval vanished from the manifest (baseline: 2 checks, 5 assertions)"),
        ("one", None, "vanished-eval", 1, None, "one: eval vanished from the manifest (baseline: 1 check, 1 assertion)"),
    ]
    assert result.not_compared == [] and result.stale == []


def test_a_new_eval_sums_its_checks() -> None:
    result = _compare({}, _eval("n", x=2, y=3), _eval("o", x=1))
    assert _lines(result.stale) == [
        ("n", None, "new-eval", None, 5, "n: new eval, not in the baseline (2 checks, 5 assertions)"),
        ("o", None, "new-eval", None, 1, "o: new eval, not in the baseline (1 check, 1 assertion)"),
    ]
    assert result.regressions == []


def test_no_baseline_file_makes_every_compared_eval_new_and_exists_false() -> None:
    result = _compare(None, _eval("n", x=1))
    assert result.exists is False
    assert [c.kind for c in result.stale] == ["new-eval"]


def test_moving_to_a_looser_tier_is_a_regression_and_to_a_stricter_one_stale() -> None:
    baseline = {"up": {"x": 2, "y": 1}, "down": {"x": 1}}
    result = compare_to_baseline(baseline, _run(), set(), Path("baselines/t2.toml"), False, UPDATE,
                                 moved={"up": "t3", "down": "t1"})
    assert _lines(result.regressions) == [
        ("up", None, "moved-looser", 3, None, "up: moved from t2 to t3, a looser tier (baseline of t2: 2 checks)"),
    ]
    assert _lines(result.stale) == [
        ("down", None, "moved-stricter", 1, None, "down: moved from t2 to t1, a stricter tier (baseline of t2: 1 check)"),
    ]
    assert result.not_compared == []


def test_a_vanished_eval_still_in_the_results_is_not_listed_as_not_compared() -> None:
    result = _compare({"gone": {"x": 1}}, _eval("gone", Status.SKIPPED), names=[])
    assert [c.kind for c in result.regressions] == ["vanished-eval"]
    assert result.not_compared == []


def test_strict_turns_every_stale_change_into_a_regression() -> None:
    result = _compare({"a": {"x": 1}}, _eval("a", x=2), _eval("b", y=1), strict=True)
    assert [(c.eval, c.kind) for c in result.regressions] == [("a", "stronger"), ("b", "new-eval")]
    assert result.stale == [] and result.strict is True


def test_changes_sort_by_eval_then_eval_level_first_then_check() -> None:
    baseline = {"b": {"z": 1, "a": 1}, "a": {"y": 1}, "c": {"x": 1}}
    result = _compare(baseline, _eval("b"), _eval("a"), names=["a", "b"])
    assert [(c.eval, c.check) for c in result.regressions] == [
        ("a", "y"), ("b", "a"), ("b", "z"), ("c", None)]


# --- what is compared ------------------------------------------------------------


def test_only_passed_and_failed_evals_are_compared() -> None:
    baseline = {name: {"x": 1} for name in ("passed", "failed", "error", "skipped", "timeout", "absent")}
    evals = [_eval("passed"), _eval("failed", Status.FAILED), _eval("error", Status.ERROR, exit_code=1),
             _eval("skipped", Status.SKIPPED, exit_code=None), _eval("timeout", Status.TIMEOUT, exit_code=None)]
    result = _compare(baseline, *evals, names=[*baseline])
    assert [(c.eval, c.kind) for c in result.regressions] == [("failed", "vanished-check"), ("passed", "vanished-check")]
    assert result.not_compared == ["absent", "error", "skipped", "timeout"]


def test_a_failure_before_the_scorer_started_is_not_compared() -> None:
    before_start = _eval("svc", Status.FAILED, exit_code=None)  # a service did not start: no process, no report
    assert failed_before_scorer(before_start) is True
    assert failed_before_scorer(_eval("ran", Status.FAILED, exit_code=1)) is False
    assert failed_before_scorer(_eval("checks", Status.FAILED, exit_code=None, x=1)) is False
    assert failed_before_scorer(_eval("passed", Status.PASSED, exit_code=None)) is False
    result = _compare({"svc": {"x": 1}, "ran": {"x": 1}}, before_start, _eval("ran", Status.FAILED, exit_code=1))
    assert result.not_compared == ["svc"]
    assert [(c.eval, c.kind) for c in result.regressions] == [("ran", "vanished-check")]


def test_an_eval_of_the_tier_that_did_not_run_is_not_compared_and_not_vanished() -> None:
    result = _compare({"later": {"x": 1}}, _eval("now", x=1), names=["now", "later"])
    assert result.not_compared == ["later"]
    assert result.regressions == [] and [c.kind for c in result.stale] == ["new-eval"]


def test_counts_stand_for_the_checks_of_the_evals_they_name_only() -> None:
    evals = [_eval("counted", x=1), _eval("built", x=1)]
    result = _compare({"counted": {"x": 1}, "built": {"x": 1}}, *evals,
                      counts={"counted": {"x": 3}, "other": {"x": 0}})
    assert _lines(result.stale) == [("counted", "x", "stronger", 1, 3, 'counted: check "x" asserts 3 (baseline: 1)')]
    new = _compare({}, _eval("counted", x=1), counts={"counted": {"x": 4, "y": 1}})
    assert [c.message for c in new.stale] == ["counted: new eval, not in the baseline (2 checks, 5 assertions)"]


# --- gate settings and judges, wired in ---------------------------------------------


def _settings(**kw) -> GateSettings:
    return GateSettings(**{"tier": "t1", **kw})


def test_settings_are_compared_only_with_a_baseline_and_for_evals_that_ran_in_the_tier() -> None:
    baseline = Baseline({"a": {"x": 1}, "b": {"x": 1}, "gone": {"x": 1}})
    baseline.settings = {name: _settings(repeat=5) for name in ("a", "b", "gone")}
    now = {name: _settings(repeat=1) for name in ("a", "b", "gone")}
    result = _compare(baseline, _eval("a", x=1), names=["a", "b"], settings=now)
    assert [(c.eval, c.kind) for c in result.regressions] == [("a", "loosened"), ("gone", "vanished-eval")]
    assert _compare(baseline, _eval("a", x=1), names=["a", "b"]).regressions[0].kind == "vanished-eval"
    assert _compare(None, _eval("a", x=1), names=["a"], settings=now).regressions == []


def test_a_changed_judge_is_stale_and_its_checks_are_not_compared_by_rate() -> None:
    from evalrun.results import CheckRate, RepeatSummary
    from evalrun.baseline.rates import RatedCount

    judged = "model-b#" + "1" * 12
    baseline = Baseline({"a": {"j": RatedCount(1, 10, 10), "plain": RatedCount(1, 10, 10)}})
    baseline.judges = {"a": ("model-a#" + "0" * 12,)}
    rate = CheckRate(runs=10, passes=0, seen=10)
    result_eval = EvalResult(
        name="a", tier="t1", dir="evals/a", status=Status.PASSED, exit_code=0,
        checks=[CheckResult(name="j", assertions=1, passed=True, rate=rate, judge=judged),
                CheckResult(name="plain", assertions=1, passed=True, rate=rate)],
        repeats=RepeatSummary(planned=10, runs=10, floor=0.0, alpha=0.05),
    )
    result = _compare(baseline, result_eval)
    assert [(c.eval, c.check, c.kind) for c in result.regressions] == [("a", "plain", "decayed")]
    assert [c.kind for c in result.stale] == ["judge-changed"]
    baseline.judges = {"a": (judged,)}
    same = _compare(baseline, result_eval)
    assert [(c.check, c.kind) for c in same.regressions] == [("j", "decayed"), ("plain", "decayed")]


def test_compare_tier_reads_the_tier_its_moves_and_the_manifests_strict(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / "evals" / name).mkdir(parents=True)
    manifest_file = tmp_path / "manifest.toml"
    manifest_file.write_text(manifest(
        an_eval("a", ["true"]), an_eval("b", ["true"], tier="t2"), baseline={"strict": True}, tiers={"t1": {}, "t2": {}},
    ).text)
    loaded = load_manifest(manifest_file)
    baseline = Baseline({"a": {"x": 1}, "b": {"x": 1}})
    result = compare_tier(loaded, _run(_eval("a", x=2)), baseline, strict=False, update_command=UPDATE)
    assert result.path.endswith("t1.toml") and result.strict is True
    assert [(c.eval, c.kind) for c in result.regressions] == [("a", "stronger"), ("b", "moved-looser")]
    lenient = loaded.model_copy(update={"baseline": loaded.baseline.model_copy(update={"strict": False})})
    loose = compare_tier(lenient, _run(_eval("a", x=2)), baseline, strict=False, update_command=UPDATE)
    assert loose.strict is False and [c.kind for c in loose.regressions] == ["moved-looser"]
    forced = compare_tier(lenient, _run(_eval("a", x=2)), baseline, strict=True, update_command=UPDATE)
    assert forced.strict is True


def test_an_evals_own_change_sorts_before_its_checks() -> None:
    baseline = Baseline({"a": {"x": 3}})
    baseline.settings = {"a": _settings(repeat=5)}
    result = _compare(baseline, _eval("a", x=2, y=1), settings={"a": _settings(repeat=1)})
    assert [(c.eval, c.check, c.kind) for c in result.regressions] == [("a", None, "loosened"), ("a", "x", "weakened")]


def test_a_baseline_dir_moved_away_from_the_tiers_baseline_is_a_regression_that_names_both(tmp_path: Path,
                                                                                            monkeypatch) -> None:
    from evalrun.reports_out.baseline_text import format_comparison

    monkeypatch.chdir(tmp_path)  # file labels are relative to the working directory

    (tmp_path / "evals" / "a").mkdir(parents=True)
    (tmp_path / "baselines").mkdir()
    (tmp_path / "baselines" / "t1.toml").write_text('[a]\nx = 1\n"gone" = 3\n')
    manifest_file = tmp_path / "manifest.toml"
    moved_away = manifest(an_eval("a", ["true"]), baseline={"dir": "gate/empty"}, tiers={"t1": {}}).text
    manifest_file.write_text(moved_away)
    moved = compare_tier(load_manifest(manifest_file), _run(_eval("a", x=1)), None, strict=False, update_command=UPDATE)
    assert [c.kind for c in moved.regressions] == ["baseline-elsewhere"]
    lines = format_comparison(moved, [])
    assert lines[0] == ("regression: no baseline at gate/empty/t1.toml, but baselines/t1.toml holds one: [baseline] "
                        "dir was moved away from it, and nothing it records would be compared; move the file to "
                        "gate/empty/t1.toml (or set dir back)")
    assert not any(line.startswith("no baseline at") for line in lines)
    # The default folder itself, or a moved dir that holds the tier's baseline, or nothing to move away from: as before.
    manifest_file.write_text(manifest(an_eval("a", ["true"]), tiers={"t1": {}}).text)
    assert compare_tier(load_manifest(manifest_file), _run(_eval("a", x=1)), None, strict=False,
                        update_command=UPDATE).regressions == []
    (tmp_path / "baselines" / "t1.toml").unlink()
    manifest_file.write_text(moved_away)
    assert compare_tier(load_manifest(manifest_file), _run(_eval("a", x=1)), None, strict=False,
                        update_command=UPDATE).regressions == []
