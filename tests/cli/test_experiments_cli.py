"""Experiments as columns, through the real CLI.

The main scenario is the repository's own agent eval under the repository's
own two experiments (``mini`` and ``nano``), replayed in t2 from the committed
fixtures of each column, plus a third column whose probe is unmet. It runs
once per module; each test reads a different part of what it produced.
"""

from __future__ import annotations

import copy
import json
import shutil
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from harness import Project, REPO, RunOutcome, an_eval, manifest
from harness.manifest_builder import EvalBlock, toml_text

UNSET = "EVALRUN_TEST_NO_SUCH_DOCKER_7Q"


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The own manifest's experiments and agent eval in a fresh project, with a third, unmet column."""
    root = tmp_path_factory.mktemp("experiments")
    shutil.copytree(REPO / "evals" / "agent", root / "evals" / "agent", ignore=shutil.ignore_patterns("__pycache__"))
    manifest_values = tomllib.loads((REPO / "manifest.toml").read_text())
    experiments = manifest_values["experiments"]
    assert set(experiments) == {"mini", "nano"}  # the repository's own two columns
    agent = next(e for e in manifest_values["evals"] if e["name"] == "agent-tools")
    agent.pop("bites", None)  # evalrun bites: not what this module tests (tests/cli/test_own_bites.py)
    # The same agent in t1: its judge() check must fail loudly there, in every column.
    static = {**agent, "name": "agent-static", "tier": "t1", "tags": ["agent"]}
    static.pop("model")
    built = manifest(
        agent, static,
        tiers={"t1": {}, "t2": {}},
        models={"judge": manifest_values["models"]["judge"], "prices": manifest_values["models"]["prices"]},
        experiments={**experiments, "docker": {"requires": [f"env:{UNSET}"], "tags": ["agent"]}},
    )
    proj = Project(root).write({"manifest.toml": built.text})
    env = {"OPENAI_API_KEY": "", "PYTHONDONTWRITEBYTECODE": "1"}
    dry = proj.run("dry", "t2", env=env)
    t2 = proj.run("t2", "--junit", "junit.xml", "--markdown", "summary.md", env=env, timeout=300)
    results = proj.results("t2")
    update = proj.run("baseline", "--update", "t2", env=env, timeout=300)
    t1 = proj.run("t1", env=env)
    return {"proj": proj, "dry": dry, "t2": t2, "results": results, "update": update, "t1": t1, "env": env,
            "manifest": built.values}


def test_dry_prints_the_matrix_with_the_unmet_column_skipped_and_why(own: dict[str, Any]) -> None:
    dry: RunOutcome = own["dry"]
    assert dry.code == 0, dry.output
    lines = dry.out.splitlines()
    row = next(line for line in lines if line.strip().startswith("agent-tools ") and "run" in line)
    assert row.split() == ["agent-tools", "run", "run", "skip", "(1)"]
    header = lines[lines.index(row) - 2].split()
    assert header == ["eval", "mini", "nano", "docker"]
    assert f"(1) agent-tools[docker]: would SKIP: experiment docker needs env:{UNSET}" in dry.out


def test_t2_replays_both_columns_from_their_own_fixtures_and_skips_the_third_loudly(own: dict[str, Any]) -> None:
    t2: RunOutcome = own["t2"]
    assert t2.code == 4, t2.output  # a skip is never a pass: not everything was checked
    by_name = {e["name"]: e for e in own["results"]["evals"]}
    assert set(by_name) == {"agent-tools[mini]", "agent-tools[nano]", "agent-tools[docker]"}
    for column in ("mini", "nano"):
        result = by_name[f"agent-tools[{column}]"]
        assert result["status"] == "passed" and result["experiment"] == column
        assert len(result["checks"]) == 7 and all(c["passed"] for c in result["checks"])
        assert result["models"]["mode"] == "replay" and result["models"]["judge"]["calls"] == 1
    # Each column replayed its own recording: the model that answered differs.
    assert by_name["agent-tools[mini]"]["models"]["models"] == ["gpt-4o-mini-2024-07-18"]
    assert by_name["agent-tools[nano]"]["models"]["models"] == ["gpt-4.1-nano-2025-04-14"]
    skipped = by_name["agent-tools[docker]"]
    assert skipped["status"] == "skipped" and skipped["experiment"] == "docker"
    assert f"experiment docker needs env:{UNSET}" in skipped["message"]
    assert f"skipped     agent-tools[docker]: experiment docker needs env:{UNSET}" in t2.out


def test_the_summary_ends_with_the_side_by_side_table(own: dict[str, Any]) -> None:
    lines = own["t2"].out.splitlines()
    start = lines.index("side by side (experiments as columns):")
    table = lines[start + 1 :]
    assert table[0].split() == ["eval", "/", "check", "mini", "nano", "docker"]
    rows = {line.strip().split("  ")[0]: line for line in table[2:] if line.startswith("  ")}
    assert rows["agent-tools"].split()[1:] == ["passed", "(7", "checks)", "passed", "(7", "checks)", "skipped"]
    truthful = rows["trip-tokyo: the final answer is truthful about the tools' results"]
    assert truthful.split()[-3:] == ["pass", "pass", "-"]
    answered = rows["model that answered"].split()
    assert answered[-3:] == ["gpt-4o-mini-2024-07-18", "gpt-4.1-nano-2025-04-14", "-"]
    assert rows["judge model"].split()[-3:] == ["gpt-4o-mini-2024-07-18", "gpt-4o-mini-2024-07-18", "-"]
    assert rows["tokens"].split()[-3:-1] == ["1736", "1736"]
    assert "cost" in rows and "duration" in rows
    # The Markdown summary shows the same table.
    markdown = (own["proj"].root / "summary.md").read_text()
    assert "| eval / check | mini | nano | docker |" in markdown
    assert "| model that answered | gpt-4o-mini-2024-07-18 | gpt-4.1-nano-2025-04-14 | - |" in markdown


def test_junit_names_each_cell_and_carries_its_experiment(own: dict[str, Any]) -> None:
    suites = {s.get("name"): s for s in ET.parse(own["proj"].root / "junit.xml").getroot().iter("testsuite")}
    assert set(suites) == {"agent-tools[mini]", "agent-tools[nano]", "agent-tools[docker]"}
    for name, suite in suites.items():
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["experiment"] == name[len("agent-tools[") : -1]
    assert suites["agent-tools[docker]"].find("testcase/skipped") is not None


def test_each_column_has_its_own_baseline_table_and_a_column_that_regresses_is_named(own: dict[str, Any]) -> None:
    proj: Project = own["proj"]
    update: RunOutcome = own["update"]
    assert update.code == 0, update.output
    baseline = _tables(proj.root / "baselines" / "t2.toml")
    assert set(baseline) == {"agent-tools[mini]", "agent-tools[nano]"}  # a skipped column is not a baseline
    assert baseline["agent-tools[mini]"] == baseline["agent-tools[nano]"] and len(baseline["agent-tools[nano]"]) == 7
    # One column's baseline asks for more than it gives: that column, and only it, regresses.
    text = (proj.root / "baselines" / "t2.toml").read_text()
    check = "weather-paris: the final answer uses the tool results"
    (proj.root / "baselines" / "t2.toml").write_text(
        text.replace('["agent-tools[nano]"]\n', '["agent-tools[nano]"]\n"a check nano lost" = 1\n')
    )
    again = proj.run("t2", "--experiment", "mini", "--experiment", "nano", env=own["env"], timeout=300)
    assert again.code == 3, again.output
    assert 'regression: agent-tools[nano]: check "a check nano lost" vanished' in again.out
    assert "regression: agent-tools[mini]" not in again.out
    assert check in baseline["agent-tools[mini]"]


def test_in_t1_the_judged_check_fails_loudly_in_every_column_never_passes(own: dict[str, Any]) -> None:
    # t1 leaves the agent no model, so the check its judge() grades fails with the reason
    # (judge() alone in t1 says "judge() needs a model": tests/cli/test_judge_cli.py).
    t1: RunOutcome = own["t1"]
    assert t1.code == 1, t1.output
    results = own["proj"].results("t1")
    assert {e["name"] for e in results["evals"]} == {"agent-static[mini]", "agent-static[nano]", "agent-static[docker]"}
    for column in ("mini", "nano"):
        checks = {c["name"]: c for c in own["proj"].eval_result(f"agent-static[{column}]")["checks"]}
        judged = checks["trip-tokyo: the final answer is truthful about the tools' results"]
        assert not judged["passed"] and "evalrun-t1-has-no-model" in (judged["message"] or "")


# ------------------------------------------------------------------ small projects


SCORER = """import json, os
env = {k: os.environ.get(k, "-") for k in ("EVALRUN_EVAL", "EVALRUN_EXPERIMENT", "EVALRUN_MODEL", "FLAVOUR", "KEEP")}
json.dump({"checks": [{"name": "ran", "passed": True, "assertions": 1}], "metrics": env},
          open(os.environ["EVALRUN_REPORT"], "w"))
"""


def _small(project: Any, experiments: dict[str, Any], *evals: EvalBlock) -> Project:
    return project(manifest(*evals, tiers={"t1": {}}, experiments=experiments).project({"e/score.py": SCORER}))


def _eval(name: str, **keys: Any) -> EvalBlock:
    return an_eval(name, dir="e", env={"FLAVOUR": "own", "KEEP": "kept"}, **keys)


def test_the_scorer_gets_its_column_env_over_the_eval_env_and_the_experiment_name(project: Any) -> None:
    proj = _small(
        project,
        {"a": {"env": {"FLAVOUR": "from-a"}, "model": "model-a"}, "b": {}},
        _eval("x"), _eval("solo", experiments=[]),
    )
    r = proj.run("t1")
    assert r.code == 0, r.output
    metrics = {e["name"]: e["metrics"] for e in proj.results()["evals"]}
    assert set(metrics) == {"x[a]", "x[b]", "solo"}
    assert metrics["x[a]"] == {"EVALRUN_EVAL": "x", "EVALRUN_EXPERIMENT": "a", "EVALRUN_MODEL": "model-a",
                               "FLAVOUR": "from-a", "KEEP": "kept"}
    assert metrics["x[b]"] == {"EVALRUN_EVAL": "x", "EVALRUN_EXPERIMENT": "b", "EVALRUN_MODEL": "-",
                               "FLAVOUR": "own", "KEEP": "kept"}
    assert metrics["solo"]["EVALRUN_EXPERIMENT"] == "-"  # experiments = []: it runs once, plainly


def test_selection_skip_rules_and_the_experiment_filter(project: Any) -> None:
    proj = _small(
        project,
        {"a": {"skip": {"tags": ["docker"], "reason": "no docker here"}}, "b": {"evals": ["y"]}},
        _eval("x", tags=["docker"]), _eval("y"),
    )
    dry = proj.run("dry", "t1")
    assert dry.code == 0, dry.output
    assert "x[a]: not planned: skip rule of experiment a (tag docker): no docker here" in dry.out
    r = proj.run("t1")
    assert r.code == 0, r.output  # a cell left out by a skip rule is not a skip of the run
    assert [e["name"] for e in proj.results()["evals"]] == ["y[a]", "y[b]"]
    assert proj.results()["selection"]["skipped_by_rule"] == {"x[a]": "skip rule of experiment a (tag docker): no docker here"}
    # x is selected by no column (a's rule leaves it out, b takes only y): it is not run plainly either.
    narrowed = proj.run("t1", "--experiment", "b")
    assert narrowed.code == 0, narrowed.output
    results = proj.results()
    assert [e["name"] for e in results["evals"]] == ["y[b]"]
    assert results["selection"]["filtered_out"] == ["y[a]"] and results["selection"]["experiments"] == ["b"]
    one = proj.run("t1", "--eval", "y[a]")
    assert one.code == 0 and [e["name"] for e in proj.results()["evals"]] == ["y[a]"], one.output
    bad = proj.run("t1", "--experiment", "nope")
    assert bad.code == 2 and bad.err.strip().count("\n") == 0
    assert "--experiment nope: no such experiment" in bad.err and "known: a, b" in bad.err


def test_shards_split_cells_and_merge_puts_the_columns_back_together(project: Any) -> None:
    proj = _small(project, {"a": {}, "b": {}}, _eval("x"), _eval("y"))
    for shard in ("1/2", "2/2"):
        r = proj.run("t1", "--shard", shard)
        assert r.code in (0, 4), r.output
    first, second = (
        json.loads((proj.root / ".evalrun" / "results" / f"t1.shard-{i}-of-2.json").read_text()) for i in (1, 2)
    )
    names = [e["name"] for e in first["evals"]] + [e["name"] for e in second["evals"]]
    assert sorted(names) == ["x[a]", "x[b]", "y[a]", "y[b]"]
    merged = proj.run("merge", ".evalrun/results/t1.shard-1-of-2.json", ".evalrun/results/t1.shard-2-of-2.json",
                      "--json", "merged.json")
    assert merged.code == 0, merged.output
    out = json.loads((proj.root / "merged.json").read_text())
    assert sorted((e["name"], e["experiment"]) for e in out["evals"]) == [
        ("x[a]", "a"), ("x[b]", "b"), ("y[a]", "a"), ("y[b]", "b")
    ]


@pytest.mark.parametrize(
    ("experiments", "eval_keys", "says"),
    [
        ({"a": {}}, {"experiments": ["zz"]},
         'evals[0] ("x").experiments: unknown experiment \'zz\'; define [experiments.zz]'),
        ({"a b": {}}, {}, "experiments.a b: 'a b' cannot name a column"),
        ({"a": {"evals": ["nope"]}}, {}, "experiments.a.evals: no eval is named 'nope'"),
        ({"a": {"env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}}}, {},
         "experiments.a.env.OPENAI_API_KEY: OPENAI_API_KEY is a model key variable; the experiment runs x (t1)"),
        ({"a": {"requires": ["nonsense:"]}}, {}, "experiments.a.requires"),
        ({"a": {"colour": "red"}}, {}, "experiments.a.colour: unknown key"),
        ({"a": {"requires": ["tcp:127.0.0.1:5432"]}}, {},
         "experiments.a.requires: 'tcp:127.0.0.1:5432' is a tcp probe, a service, and the experiment runs x (t1)"),
    ],
)
def test_a_wrong_experiment_is_one_line_naming_the_place(
    project: Any, experiments: dict[str, Any], eval_keys: dict[str, Any], says: str
) -> None:
    proj = _small(project, experiments, _eval("x", **eval_keys))
    r = proj.run("dry")
    assert r.code == 2, r.output
    assert r.err.strip().count("\n") == 0 and "manifest.toml" in r.err
    assert says in r.err, r.err


def test_an_experiment_budget_caps_its_column_alone(own: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path / "capped"
    shutil.copytree(own["proj"].root / "evals", root / "evals")
    capped = copy.deepcopy(own["manifest"])
    capped["experiments"]["nano"]["budget"] = {"calls": 3}
    proj = Project(root).write({"manifest.toml": toml_text(capped)})
    r = proj.run("t2", "-x", "mini", "-x", "nano", env=own["env"], timeout=300)
    assert r.code == 4, r.output  # budget: not checked, never failed
    nano, mini = proj.eval_result("agent-tools[nano]", "t2"), proj.eval_result("agent-tools[mini]", "t2")
    assert nano["status"] == "budget" and "experiment 'nano' budget exhausted: 3 of 3 calls used" in nano["message"]
    assert mini["status"] == "passed" and mini["models"]["calls"] == 7


# ------------------------------------------------------------------ the cell name parser

from hypothesis import given, strategies as st  # noqa: E402

from evalrun.manifest import EXPERIMENT_NAME  # noqa: E402
from evalrun.plan import cell_name, split_cell_name  # noqa: E402

_EVAL_NAMES = st.text(min_size=1, max_size=40).filter(lambda n: n == n.strip() and "\n" not in n and "/" not in n)
_COLUMNS = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,20}", fullmatch=True)


@given(_EVAL_NAMES, _COLUMNS)
def test_a_cell_name_splits_back_into_its_eval_and_experiment(eval_name: str, column: str) -> None:
    assert EXPERIMENT_NAME.match(column)
    assert split_cell_name(cell_name(eval_name, column)) == (eval_name, column)


@given(_EVAL_NAMES)
def test_a_plain_name_never_splits_unless_it_looks_like_a_cell(name: str) -> None:
    base, column = split_cell_name(name)
    if column is None:
        assert base == name
    else:
        assert cell_name(base, column) == name and base and column


def _tables(path: Path) -> dict[str, Any]:
    """A baseline's check tables, without its gate settings and judges (docs/gate-settings.md, docs/judges.md)."""
    return {k: v for k, v in tomllib.loads(path.read_text()).items() if k not in ("/settings", "/judges")}


def test_baseline_update_narrowed_to_one_column_keeps_the_other_columns_tables(project: Any) -> None:
    proj = _small(project, {"a": {}, "b": {}}, _eval("x"))
    assert proj.run("baseline", "--update", "t1").code == 0
    path = proj.root / "baselines" / "t1.toml"
    assert set(_tables(path)) == {"x[a]", "x[b]"}
    text = path.read_text()
    path.write_text(text.replace('["x[b]"]\n', '["x[b]"]\nold = 2\n'))
    assert tomllib.loads(path.read_text())["x[b]"] == {"ran": 1, "old": 2}
    r = proj.run("baseline", "--update", "t1", "--experiment", "a")
    assert r.code == 0, r.output
    assert _tables(path) == {"x[a]": {"ran": 1}, "x[b]": {"ran": 1, "old": 2}}
    r = proj.run("baseline", "--update", "t1", "--experiment", "b")
    assert r.code == 0, r.output
    assert _tables(path) == {"x[a]": {"ran": 1}, "x[b]": {"ran": 1}}
    assert set(tomllib.loads(path.read_text())["/settings"]) == {"x[a]", "x[b]"}  # each column's gate settings


def test_dry_without_probes_marks_a_column_with_requirements_unprobed_not_runnable(project: Any) -> None:
    proj = _small(project, {"a": {"requires": ["env:HOME"]}, "b": {}}, _eval("x"))
    r = proj.run("dry", "--no-probe")
    assert r.code == 0, r.output
    assert "x[a]: not probed (--no-probe)" in r.out and "x[b]: would run" in r.out
    row = next(line for line in r.out.splitlines() if line.strip().startswith("x "))
    assert row.split() == ["x", "unprobed", "(1)", "run"]


def test_a_plain_fixtures_folder_lists_no_experiment_folder_as_a_session(tmp_path: Path) -> None:
    from evalrun.models.replay.fixtures import list_fixtures

    # Only folders a session could name are sessions: "@mini" (a column) and "a b" never are.
    for session in ("plain", "@mini/plain", "@mini", "a b"):
        (tmp_path / session).mkdir(parents=True, exist_ok=True)
        (tmp_path / session / "0001.json").write_text("{}")
    assert set(list_fixtures(tmp_path)) == {("plain", 1)}
    assert set(list_fixtures(tmp_path / "@mini")) == {("plain", 1)}
