"""A judge measured on human-labelled anchors, through the real CLI: recorded in t3, replayed in t2.

The fake upstream (tests/harness/fakes_upstream.py) judges like a real, imperfect
judge: it passes what says "good", and also the one bad answer that says
"sounds good". People labelled that one a fail, so the judge agrees on 9 of
10 anchors: TPR 1.0, TNR 0.8, kappa 0.8, AC1 0.802. The judged eval's checks
(3 of 4 pass) are corrected for those error rates: (0.75 + 0.8 - 1) / 0.8.
"""

from __future__ import annotations

import json
import os

import pytest

from harness import an_eval, manifest, replayed_pair
from harness.fakes_upstream import FakeUpstream

KEY = "sk-test-anchors-" + os.urandom(8).hex()
RUBRIC = "The answer is good."
ANCHORS = [
    {"id": f"good-{i}", "subject": f"a good answer {i}", "rubric": RUBRIC, "label": True} for i in range(5)
] + [
    {"id": f"bad-{i}", "subject": f"a bad answer {i}" + (" that sounds good" if i == 3 else ""), "rubric": RUBRIC,
     "label": False} for i in range(5)
]
JUDGED_SCORER = f'''
from evalrun import scorer
for i, subject in enumerate(["good one", "good two", "good three", "poor four"]):
    with scorer.check(f"answer {{i}}") as c:
        try:
            c.judge(subject, {RUBRIC!r})
        except Exception:
            pass
'''


def anchors_manifest(upstream: str, min_kappa: float = 0.5, judge: str = "gpt-4o-mini") -> str:
    """The anchors eval and a judged eval, each replayed in t2 and live in t3."""
    anchors_run = ["python", "-m", "evalrun.scorer.anchors", "anchors.jsonl"]
    floors = {"min_kappa": min_kappa}
    return manifest(
        *replayed_pair("judge-anchors", anchors_run, dir="evals/anchors", anchors=floors),
        *replayed_pair("judged"),
        tiers={"t2": {}, "t3": {}},
        models={"upstream": upstream, "judge": judge, "strict_replay": True},
    ).text


# Only the tests that share the module fixture stay together on one worker; the others are free.
SHARED = pytest.mark.xdist_group("judge-anchors")


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    from harness import Project

    proj = Project(tmp_path_factory.mktemp("anchors"))
    with FakeUpstream(judge=lambda subject: "good" in subject) as upstream:
        proj.write({
            "manifest.toml": anchors_manifest(upstream.url),
            "evals/anchors/anchors.jsonl": "\n".join(json.dumps(a) for a in ANCHORS) + "\n",
            "evals/judged/score.py": JUDGED_SCORER,
        })
        recorded = proj.run("t3", "--record", env={"OPENAI_API_KEY": KEY}, timeout=300)
        url = upstream.url
    replayed = proj.run("t2", env={"OPENAI_API_KEY": ""}, timeout=300)
    return proj, url, recorded, replayed


@SHARED
def test_the_live_run_measures_the_judge_and_corrects_the_judged_pass_rate(suite) -> None:
    proj, _, recorded, _ = suite
    assert recorded.code == 1, recorded.output  # "answer 3" fails its judge: the judged eval fails
    [cal] = proj.results("t3")["judges"]
    assert (cal["both_pass"], cal["only_people"], cal["only_judge"], cal["both_fail"]) == (5, 0, 1, 4)
    assert cal["true_positive_rate"] == 1.0 and cal["true_negative_rate"] == 0.8
    assert cal["kappa"] == 0.8 and cal["ac1"] == pytest.approx(0.405 / 0.505, abs=1e-4)
    assert cal["judge"].startswith("gpt-4o-mini#") and cal["below"] == []
    assert (cal["judged_checks"], cal["judged_passes"]) == (4, 3)
    assert cal["corrected"][0] == pytest.approx(0.6875, abs=1e-4)


@SHARED
def test_the_replay_checks_the_same_arithmetic_without_a_key(suite) -> None:
    proj, _, _, replayed = suite
    assert replayed.code == 1, replayed.output
    [cal] = proj.results("t2")["judges"]
    assert cal["kappa"] == 0.8 and cal["corrected"][0] == pytest.approx(0.6875, abs=1e-4)
    lines = replayed.out.splitlines()
    head = next(line for line in lines if line.startswith("judge gpt-4o-mini (rubric "))
    assert head.endswith("agrees with people on 9 of 10 anchors (judge-anchors): TPR 1.00, TNR 0.80, kappa 0.80, AC1 0.80")
    assert "  judged checks: 3 of 4 pass (75%); corrected for the judge's errors 69% (95% CI" in replayed.out
    anchors = proj.eval_result("judge-anchors", "t2")
    assert anchors["status"] == "passed" and len(anchors["checks"]) == 10
    bad3 = next(c for c in anchors["checks"] if c["name"] == "anchor bad-3")
    assert bad3["passed"] and "people: fail; judge: pass" in bad3["evidence"]
    assert all(c["judge"] == cal["judge"] for c in anchors["checks"])
    judged = proj.eval_result("judged", "t2")
    assert {c["judge"] for c in judged["checks"]} == {cal["judge"]}  # same model, same rubric: the same judge


@SHARED
def test_a_judge_below_its_floor_fails_its_anchors_eval_with_one_line(suite) -> None:
    proj, url, _, _ = suite
    (proj.root / "manifest.toml").write_text(anchors_manifest(url, min_kappa=0.9))
    try:
        r = proj.run("t2", "-e", "judge-anchors", env={"OPENAI_API_KEY": ""}, timeout=300)
    finally:
        (proj.root / "manifest.toml").write_text(anchors_manifest(url))
    assert r.code == 1, r.output
    assert "  below its floor: kappa 0.80 < min_kappa 0.9 (judge-anchors fails)" in r.out.splitlines()
    result = proj.eval_result("judge-anchors", "t2")
    assert result["status"] == "failed"
    assert result["message"] == "the judge agrees with people less than its floor: kappa 0.80 < min_kappa 0.9"


def test_a_malformed_anchors_file_is_one_line_naming_the_place(project) -> None:
    proj = project({
        "manifest.toml": manifest(an_eval("a", ["python", "-m", "evalrun.scorer.anchors", "anchors.jsonl"], tier="t2",
                                          dir="e", model=True, anchors={})).text,
        "e/anchors.jsonl": '{"id": "x", "subject": "s", "rubric": "r", "label": true}\n{"id": "x", "subject": "s", "rubric": "r", "label": "yes"}\n',
    })
    r = proj.run("t2")
    assert r.code == 1, r.output
    assert 'anchors.jsonl:2: id "x" is used twice; ids must be unique' in r.output
