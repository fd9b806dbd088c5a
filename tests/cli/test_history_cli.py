"""The issue's "done when", through the real CLI in a real git repository.

``evalrun t1`` runs three times with a commit before each and one check broken
in the middle run; ``evalrun history --check`` then names the first bad run and
its commit and the last good commit, against the default SQLite file and
against embedded PostgreSQL (``EVALRUN_HISTORY_URL``). Also: ``history import``,
``--json``, ``report --html``, ``--html`` on a run, and ``evalrun init``.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

import pytest

from harness.history_runs import HOSTILE, calc_project, commit_state, git, three_runs


# good, broken, good is recorded once per history store for this module: the
# tests that only read it share it (one worker runs them), and a test
# that goes on recording works on a copy of the SQLite one. The module's other tests run on any worker.
SHARED = pytest.mark.xdist_group("history-cli")


@pytest.fixture(scope="module")
def recorded_sqlite(tmp_path_factory: pytest.TempPathFactory):
    from harness import Project

    p = Project(tmp_path_factory.mktemp("recorded-sqlite"))
    return p, three_runs(p, {}), {}


@pytest.fixture(scope="module")
def recorded_postgres(tmp_path_factory: pytest.TempPathFactory, postgres_url: str):
    import psycopg
    from harness import Project

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    env = {"EVALRUN_HISTORY_URL": postgres_url.rsplit("/", 1)[0] + "/" + name}
    p = Project(tmp_path_factory.mktemp("recorded-postgres"))
    return p, three_runs(p, env), env


@pytest.fixture(params=["sqlite", "postgres"])
def recorded(request: pytest.FixtureRequest):
    """(project, [(commit, exit code)] of good, broken, good, the run environment) in each history store; read it only."""
    return request.getfixturevalue(f"recorded_{request.param}")


@SHARED
def test_history_names_the_first_bad_run_and_commit(recorded) -> None:
    p, runs, history_env = recorded
    assert [code for _, code in runs] == [0, 1, 0]
    (c1, _), (c2, _), (c3, _) = runs
    data = json.loads(p.run("history", "t1", "--json", env=history_env).out)
    assert [r["commit"] for r in data["runs"]] == [None, c1, c2, c3]  # the baseline update ran before any commit
    assert [r["exit_code"] for r in data["runs"]][1:] == [0, 1, 0]
    bad_run = data["runs"][2]["run_id"]
    shown = p.run("history", "--check", "stays green", env=history_env)
    assert shown.code == 0, shown.output
    # Broke at one commit, fixed at the next: a fixed regression, not flaky (issue 22).
    assert (f"failed at commit {c2[:10]}, fixed at commit {c3[:10]} ({bad_run} to {data['runs'][3]['run_id']})"
            in shown.out)
    assert "passing now (3 of 4 runs passed)\n" in shown.out and "flaky" not in shown.out
    assert f"{bad_run}  {c2[:10]}   failed    1 assertion" in shown.out
    if history_env:  # the PostgreSQL run leaves no SQLite file behind
        assert not (p.root / ".evalrun" / "history.sqlite").exists()
    else:
        assert (p.root / ".evalrun" / "history.sqlite").is_file()
    narrowed = json.loads(p.run("history", "t1", "--check", "stays green", "--json", env=history_env).out)
    [series] = narrowed["checks"]
    assert series["last_failure"]["first_bad_commit"] == c2 and series["last_failure"]["last_good_commit"] == c1
    assert [pt["status"] for pt in series["points"]] == ["passed", "passed", "failed", "passed"]


@SHARED
def test_a_check_still_failing_says_since_when(recorded_sqlite, tmp_path: Path) -> None:
    from harness import Project

    p = Project(Path(shutil.copytree(recorded_sqlite[0].root, tmp_path / "copy", symlinks=True)))
    c4 = commit_state(p, "broken")
    assert p.run("t1").code == 1
    out = p.run("history", "t1", "--eval", "calc", "--check", "stays green").out
    last = json.loads(p.run("history", "t1", "--json").out)["runs"][-1]
    assert f"failing since {last['run_id']} (commit {c4[:10]}; last passed at commit " in out
    assert "passing now" not in out


@SHARED
def test_history_table_lists_runs_with_counts(recorded) -> None:
    p, runs, history_env = recorded
    out = p.run("history", "--last", "2", env=history_env).out.splitlines()
    assert out[0].split() == ["time", "run", "tier", "commit", "exit", "passed", "failed", "skipped"]
    assert len(out) == 3
    assert out[1].split()[-6:] == ["t1", runs[1][0][:10], "1", "0", "1", "0"]
    assert out[2].split()[-6:] == ["t1", runs[2][0][:10], "0", "1", "0", "0"]


def test_history_bad_arguments_are_one_line(project) -> None:
    p = project(calc_project())
    empty = p.run("history")
    assert (empty.code, empty.out.strip()) == (0, f"no runs in the history yet ({p.root / '.evalrun' / 'history.sqlite'})")
    assert not (p.root / ".evalrun").exists()  # reading creates nothing
    assert p.run("t1").code == 0
    for args, message in [
        (("history", "t9"), "evalrun: error: unknown tier 't9'; use one of t1, t2, t3"),
        (("history", "t1", "t2"), "evalrun: error: history: expected at most one TIER, got t1 t2"),
        (("history", "--check", "nope"), "evalrun: error: --check nope: no such check in the last 1 runs"),
        (("history", "import"), "evalrun: error: history import: name at least one results file"),
    ]:
        result = p.run(*args)
        assert (result.code, result.err.strip()) == (2, message)


def test_history_off_refuses_the_command_and_writes_nothing(project) -> None:
    p = project(calc_project(history={"enabled": False}))
    assert p.run("t1").code == 0
    assert not (p.root / ".evalrun" / "history.sqlite").exists()
    result = p.run("history")
    assert result.code == 2 and "history is off ([history] enabled = false)" in result.err


def test_history_import_loads_results_files_once(project, tmp_path: Path) -> None:
    p = project(calc_project(history={"url": "sqlite:other.sqlite"}))
    assert p.run("t1", "--json", "a.json").code == 0
    p.write({"evals/calc/state.txt": "broken\n"})
    assert p.run("t1", "--json", "b.json").code == 1
    (p.root / "other.sqlite").unlink()  # forget both runs; import them back
    imported = p.run("history", "import", "a.json", "b.json")
    assert imported.code == 0 and imported.out.count("imported ") == 2
    again = p.run("history", "import", "a.json")
    assert "already in the history: a.json" in again.out
    data = json.loads(p.run("history", "--json").out)
    assert [r["exit_code"] for r in data["runs"]] == [0, 1] and {r["source"] for r in data["runs"]} == {"import"}
    (p.root / "bad.json").write_text("{")
    bad = p.run("history", "import", "a.json", "bad.json")
    assert bad.code == 2 and "bad.json: line 1: invalid JSON" in bad.err


def test_a_history_that_cannot_be_written_warns_and_keeps_the_verdict(project) -> None:
    from evalrun.services.postgres import free_port

    password = "pw-" + os.urandom(6).hex()
    p = project(calc_project("broken"))
    url = f"postgresql://u:{password}@127.0.0.1:{free_port()}/h"
    result = p.run("t1", env={"EVALRUN_HISTORY_URL": url})
    assert result.code == 1  # the failed check decides, not the history
    assert "history: not recorded: postgresql://u:***@127.0.0.1:" in result.output
    assert password not in result.output
    assert p.results()["exit_code"] == 1


@SHARED
def test_report_html_shows_the_dip_and_escapes_scorer_text(recorded) -> None:
    p, _, history_env = recorded
    result = p.run("report", "--html", "r.html", env=history_env)
    assert result.code == 0, result.output
    html = (p.root / "r.html").read_text()
    assert 'data-chart="pass-rate" data-values="100,100,75,100"' in html
    assert 'data-chart="metric:calc:latency_ms" data-values="120,120,480,120"' in html
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # ours, and nothing a scorer wrote
    assert "http://" not in html and "https://" not in html  # nothing to fetch
    only_last = p.run("report", "t1", "--html", "one.html", "--last", "1", env=history_env)
    assert only_last.code == 0 and 'data-chart="pass-rate" data-values="100"' in (p.root / "one.html").read_text()


def test_html_on_a_run_writes_the_report_after_it(project) -> None:
    p = project(calc_project("broken", history={"enabled": False}))
    result = p.run("t1", "--html", "out/run.html")
    assert result.code == 1 and "html: out/run.html" in result.out
    html = (p.root / "out" / "run.html").read_text()
    assert "failed (exit 1)" in html and "history is off" in html and "the state file says broken" in html


def test_report_without_any_run_is_one_line(project) -> None:
    p = project(calc_project())
    result = p.run("report", "--html", "r.html")
    assert (result.code, result.err.strip()) == (
        2, "evalrun: error: no runs in the history and no .evalrun/results/t1.json; run evalrun t1 first")
    assert p.run("report").err.strip() == "evalrun: error: report: pass --html PATH (the file to write)"


# ---------------------------------------------------------------- init


def test_init_then_t1_is_green(project) -> None:
    p = project({".gitignore": "build/"})
    result = p.run("init")
    assert result.code == 0, result.output
    assert (p.root / ".gitignore").read_text() == "build/\n.evalrun/\n"
    assert (p.root / "baselines").is_dir()
    assert "from evalrun import scorer" in (p.root / "evals" / "example" / "score.py").read_text()
    run = p.run("t1")
    assert run.code == 0, run.output
    assert "2 checks, 3 assertions" in run.out
    assert (p.root / ".evalrun" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_init_overwrites_nothing(project) -> None:
    p = project({"evals/example/keep.txt": "mine"})
    result = p.run("init")
    assert (result.code, result.err.strip()) == (
        2, "evalrun: error: init: evals/example already exists; evalrun init overwrites nothing, run it in an empty folder")
    assert not (p.root / "manifest.toml").exists() and not (p.root / ".gitignore").exists()
    assert (p.root / "evals" / "example" / "keep.txt").read_text() == "mine"


def test_shards_and_their_merge_go_into_one_history(project, history_env: dict[str, str]) -> None:
    from harness import eval_entry, json_scorer

    files = {"manifest.toml": "[tiers.t1]\n" + "".join(eval_entry(n) for n in ("a", "b", "c"))}
    for n in ("a", "b", "c"):
        files[f"evals/{n}/score.py"] = json_scorer([{"name": f"{n} works", "assertions": 1, "passed": True}])
    p = project(files)
    for i in (1, 2):
        assert p.run("t1", "--shard", f"{i}/2", "--json", f"s{i}.json", env=history_env).code == 0
    merged = p.run("merge", "s1.json", "s2.json", env=history_env)
    assert merged.code == 0, merged.output
    data = json.loads(p.run("history", "--json", env=history_env).out)
    assert [(r["source"], r["passed"]) for r in data["runs"]] == [("merge", 3)]  # the shards are parts of it
    every = json.loads(p.run("history", "--json", "--shards", env=history_env).out)
    assert sorted(r["source"] for r in every["runs"]) == ["merge", "shard", "shard"]
    assert sum(r["passed"] for r in every["runs"] if r["source"] == "shard") == 3
    assert "(merge)" in p.run("history", env=history_env).out


def test_a_clean_checkout_run_is_recorded_in_the_real_repository(project) -> None:
    p = project(calc_project())
    git(p.root, "init", "-q", "-b", "main")
    head = commit_state(p, "good")
    result = p.run("t1", "--clean-checkout", "--html", "r.html")
    assert result.code == 0, result.output
    [run] = json.loads(p.run("history", "--json").out)["runs"]
    assert (run["commit"], run["branch"], run["dirty"]) == (head, "main", False)
    assert (p.root / "r.html").is_file()
