"""The small commands' lines are worded in reports_out: init, check, report, baseline, history, show, merge, replay."""

from __future__ import annotations

from pathlib import Path

from evalrun.manifest.schema import EvalSpec
from evalrun.models.replay.state import ProxyEvalReport
from evalrun.reports_out.baseline_text import baseline_matches, baseline_written, tier_note
from evalrun.reports_out.command_lines import (
    chosen_tier, check_verdict, check_warning, gitignore_line, html_written, init_next_lines, init_wrote,
    missing_program, node_next_lines,
)
from evalrun.reports_out.history_text import imported, no_runs
from evalrun.reports_out.replay_text import serve_banner, serve_summary
from evalrun.reports_out.shards import merged_shards
from evalrun.reports_out.transcript import show_header


def test_init_says_what_it_wrote_and_what_comes_next() -> None:
    assert init_wrote(Path("manifest.toml")) == "wrote manifest.toml"
    assert gitignore_line(Path(".gitignore"), [".evalrun/"], existed=False) == "wrote .gitignore"
    assert gitignore_line(Path(".gitignore"), [".evalrun/", "evals/unit/out/"], existed=True) == (
        "added .evalrun/ and evals/unit/out/ to .gitignore")
    assert init_next_lines(model=False) == [
        'scorers import your project\'s code: pythonpath = ["."] in manifest.toml (add "src" if it lives there)',
        "next: evalrun t1, then evalrun baseline --update t1 and commit baselines/",
    ]
    with_model = init_next_lines(model=True)
    assert with_model[1] == "next: evalrun t1                 green now (no model, no key)"
    assert with_model[-1] == "      evalrun baseline --update t1 and evalrun baseline --update t2, then commit baselines/"


def test_a_node_project_is_told_about_its_runner_or_the_lack_of_one() -> None:
    jest = node_next_lines("jest")
    assert jest[0] == ("node project: evals/example/score.mjs is a Node scorer; .github/workflows/evals.yml sets up "
                       "Node and Python")
    assert "it needs jest-junit (npm install --save-dev jest-junit)" in jest[1]
    assert node_next_lines(None)[1].startswith("no vitest or jest in package.json: add one")
    assert node_next_lines("vitest")[-1] == "next: evalrun t1, then evalrun baseline --update t1 and commit baselines/"


def test_check_says_valid_and_what_it_found() -> None:
    assert check_verdict(Path("manifest.toml"), 1, 0, 0) == (
        "manifest.toml: valid, 1 eval; no absolute paths of this machine")
    assert check_verdict(Path("m.toml"), 3, 2, 1) == (
        "m.toml: valid, 3 evals; 2 absolute path warnings; 1 program not found here")
    assert check_warning("x") == "warning: x"
    spec = EvalSpec(name="a", tier="t1", dir="evals/a", run=["pyhton", "score.py"])
    assert missing_program(Path("manifest.toml"), 0, spec, "program not found: pyhton") == (
        'manifest.toml: evals[0] ("a").run[0]: program not found: pyhton '
        "(run[0] is looked up on the PATH its scorer gets: fix the name, or install it)")


def test_report_baseline_history_show_and_merge_lines() -> None:
    assert html_written(Path("out/run.html"), "t1", 1) == "html: out/run.html (t1, 1 run)"
    assert chosen_tier("t2") == "tier t2: the tier of the latest run in the history (name a tier to report another)"
    assert baseline_written(Path("baselines/t1.toml"), 1, 1) == "wrote baselines/t1.toml (1 eval, 1 check)"
    assert baseline_matches("t1", Path("r.json"), Path("baselines/t1.toml")) == (
        "t1: results in r.json match baselines/t1.toml")
    assert tier_note("t1", "kept b") == "t1: kept b"
    assert no_runs("t1", "h.sqlite") == "no runs of t1 in the history yet (h.sqlite)"
    assert imported(Path("a.json"), "r1", True) == "imported a.json (r1)"
    assert imported(Path("a.json"), "r1", False) == "already in the history: a.json (r1)"
    assert show_header("t2", "2026-01-01T10:00:00Z", "r.json") == "t2 run of 2026-01-01T10:00:00Z (r.json)"
    assert merged_shards(3) == "merged 3 shard results"


def test_replay_serve_says_where_it_listens_and_what_it_served() -> None:
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    assert serve_banner("record", Path("fx"), "http://127.0.0.1:1", None, env, "demo") == [
        "evalrun replay: record proxy for fx on http://127.0.0.1:1 (Ctrl-C to stop)",
        "evalrun replay: upstream https://api.openai.com / https://api.anthropic.com",
        "  export OPENAI_BASE_URL=http://127.0.0.1:1/v1",
        "  (sessions: send an X-Evalrun-Session header; without one the session is 'demo')",
    ]
    assert len(serve_banner("replay", Path("fx"), "u", "http://up", env, "demo")) == 3  # replay calls go nowhere
    report = ProxyEvalReport(eval="demo", mode="replay", calls=0, input_tokens=0, output_tokens=0, total_tokens=0,
                             providers=(), models=(), missing=("missing fixture fx/demo/0001.json",),
                             unplayed=("fx/demo/0002.json was recorded but not requested",), budget_hit=False)
    assert serve_summary(report) == [
        "evalrun replay: 0 calls, 0 tokens (0 in, 0 out), provider -, models -",
        "  missing fixture fx/demo/0001.json",
        "  fx/demo/0002.json was recorded but not requested",
    ]
