"""Who judged, in the baseline: recorded by baseline --update, read by every reader alike, and a judge swap
reported rather than compared as a change of the product."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalrun.baseline import compare_to_baseline, load_baseline, write_baseline
from evalrun.baseline.format import read_whole_written_form, read_written_form
from evalrun.baseline.judges import updated_judges
from evalrun.baseline.rates import RatedCount
from evalrun.errors import BaselineError
from evalrun.reports_out.baseline_text import format_comparison
from evalrun.results import CheckRate, CheckResult, EvalResult, RepeatSummary, RunResults, Status

MINI = "gpt-4o-mini#3f2a9c1b7e4d"
BIG = "gpt-4.1#9c0d1e2f3a4b"
names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20).filter(lambda n: "/" not in n)
identity = st.builds(lambda m, h: f"{m}#{h}", st.from_regex(r"[A-Za-z0-9._:/@+-]{1,20}", fullmatch=True),
                     st.from_regex(r"[0-9a-f]{12}", fullmatch=True))


@settings(max_examples=75, deadline=None)
@given(st.dictionaries(names, st.dictionaries(names, st.integers(0, 99), min_size=1, max_size=3), min_size=1, max_size=3),
       st.data())
def test_judges_written_read_back_the_same_by_every_reader(tmp_path_factory, data, draw) -> None:
    judges = {name: tuple(sorted(set(draw.draw(st.lists(identity, min_size=1, max_size=3))))) for name in data}
    path = Path(tmp_path_factory.mktemp("b")) / "t1.toml"
    write_baseline(path, data, "evalrun baseline --update t1", judges=judges)
    text = path.read_text(encoding="utf-8")
    as_toml = tomllib.loads(text)
    assert {k: tuple(v) for k, v in as_toml.pop("/judges").items()} == judges and as_toml == data
    for fast in (read_whole_written_form(text), read_written_form(text)):
        assert fast is not None  # the fast readers take it: no fallback
        assert {k: tuple(v) for k, v in fast.pop("/judges").items()} == judges and fast == data
    loaded = load_baseline(path)
    assert loaded == data and loaded.judges == judges


def test_a_judges_entry_that_is_no_identity_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "t1.toml"
    path.write_text('["/judges"]\ncoin = ["gpt-4o-mini"]\n\n[coin]\nx = 1\n')
    with pytest.raises(BaselineError, match=r'\["/judges"\] "coin": must be a list of judge identities "MODEL#HASH"'):
        load_baseline(path)


def _judged(judge: str, passes: int, runs: int = 10) -> RunResults:
    checks = [
        CheckResult(name="graded", assertions=1, passed=True, judge=judge,
                    rate=CheckRate(runs=runs, passes=passes, seen=runs)),
        CheckResult(name="plain", assertions=2, passed=True, rate=CheckRate(runs=runs, passes=passes, seen=runs)),
    ]
    result = EvalResult(name="coin", tier="t2", dir="e", status=Status.PASSED, checks=checks,
                        repeats=RepeatSummary(planned=runs, runs=runs, floor=0.0, alpha=0.05))
    return RunResults(evalrun_version="0", tier="t2", manifest="m.toml", started_at="2024-01-01T00:00:00Z", evals=[result])


def _compare(now: RunResults, recorded_judge: str | None, strict: bool = False):
    baseline = load_from({"coin": {"graded": RatedCount(1, 10, 10), "plain": RatedCount(2, 10, 10)}},
                         {"coin": (recorded_judge,)} if recorded_judge else {})
    return compare_to_baseline(baseline, now, {"coin"}, Path("baselines/t2.toml"), strict, "evalrun baseline --update t2")


def load_from(data, judges):
    from evalrun.baseline import Baseline

    baseline = Baseline(data)
    baseline.judges = judges
    return baseline


def test_the_same_judge_compares_pass_rates_as_ever() -> None:
    cmp = _compare(_judged(MINI, passes=3), MINI)
    assert sorted(c.check for c in cmp.regressions if c.kind == "decayed") == ["graded", "plain"]
    assert [c for c in cmp.stale if c.kind == "judge-changed"] == []


def test_a_judge_swap_is_said_and_its_judged_checks_are_not_compared_by_rate() -> None:
    cmp = _compare(_judged(BIG, passes=3), MINI)
    # "plain" was not judged: its drop is still a regression; "graded" changed judge: not compared
    assert [c.check for c in cmp.regressions if c.kind == "decayed"] == ["plain"]
    [swap] = [c for c in cmp.stale if c.kind == "judge-changed"]
    assert swap.message == f"coin: the judge changed ({MINI} -> {BIG}); 1 judged check not compared by pass rate"
    assert "1 eval judged by another judge" in "\n".join(format_comparison(cmp))


def test_a_judge_swap_is_no_fix_either() -> None:
    now = _judged(BIG, passes=10)
    baseline = load_from({"coin": {"graded": RatedCount(1, 2, 10), "plain": RatedCount(2, 10, 10)}}, {"coin": (MINI,)})
    cmp = compare_to_baseline(baseline, now, {"coin"}, Path("baselines/t2.toml"), False, "u")
    assert [c for c in cmp.stale if c.kind == "improved"] == []
    assert [c.kind for c in cmp.stale] == ["judge-changed"]


def test_under_strict_a_judge_swap_is_a_regression() -> None:
    cmp = _compare(_judged(BIG, passes=10), MINI, strict=True)
    assert [c.kind for c in cmp.regressions] == ["judge-changed"]


def test_a_baseline_from_before_judges_were_recorded_compares_none() -> None:
    data = {"coin": {"graded": RatedCount(1, 10, 10), "plain": RatedCount(2, 10, 10)}}
    from evalrun.baseline import Baseline

    cmp = compare_to_baseline(Baseline(data), _judged(BIG, passes=10), {"coin"}, Path("baselines/t2.toml"), False, "u")
    assert cmp.stale == [] and cmp.regressions == []


def test_update_records_the_judges_of_the_evals_that_passed_and_keeps_the_rest() -> None:
    run = _judged(BIG, passes=10)
    skipped = EvalResult(name="other", tier="t2", dir="e", status=Status.SKIPPED)
    assert updated_judges({"other": (MINI,)}, [*run.evals, skipped], keep=["coin", "other"]) == {
        "coin": (BIG,), "other": (MINI,)}


# --- end to end: a judge swap between two recorded runs ------------------------------------------------

import os  # noqa: E402

from harness import manifest, replayed_pair  # noqa: E402
from harness.fakes_upstream import FakeUpstream  # noqa: E402

SCORER = '''
from evalrun import scorer
for subject in ["good one", "good two"]:
    with scorer.check(f"judged {subject}") as c:
        c.judge(subject, "The answer is good.")
with scorer.check("plain") as c:
    c.true(True)
'''


def _manifest(upstream: str, judge: str) -> str:
    return manifest(*replayed_pair("graded", ["python", "s.py"], dir="e"), tiers={"t2": {}, "t3": {}},
                    models={"upstream": upstream, "judge": judge, "strict_replay": True}).text


def test_a_judge_swap_between_two_recorded_runs_is_reported_not_compared(project) -> None:
    key = {"OPENAI_API_KEY": "sk-swap-" + os.urandom(8).hex()}
    proj = project({"e/s.py": SCORER})
    with FakeUpstream(judge=lambda subject: "good" in subject) as upstream:
        proj.write({"manifest.toml": _manifest(upstream.url, "gpt-4o-mini")})
        assert proj.run("t3", "--record", env=key).code == 0
        update = proj.run("baseline", "--update", "t2", env={"OPENAI_API_KEY": ""})
        assert update.code == 0, update.output
        text = (proj.root / "baselines" / "t2.toml").read_text()
        assert '["/judges"]\ngraded = ["gpt-4o-mini#' in text
        proj.write({"manifest.toml": _manifest(upstream.url, "gpt-4.1-mini")})
        assert proj.run("t3", "--record", env=key).code == 0
    replayed = proj.run("t2", env={"OPENAI_API_KEY": ""})
    assert replayed.code == 0, replayed.output
    line = next(x for x in replayed.out.splitlines() if "the judge changed" in x)
    assert "graded: the judge changed (gpt-4o-mini#" in line and "-> gpt-4.1-mini#" in line
    assert line.endswith("2 judged checks not compared by pass rate")
    assert "1 eval judged by another judge" in replayed.out
    strict = proj.run("t2", "--strict-baseline", env={"OPENAI_API_KEY": ""})
    assert strict.code == 3, strict.output
