"""What the CLI says is true and works as written: hints, help, dry, nothing selected, shards, output paths."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import threading
from pathlib import Path

from harness import eval_entry, json_scorer
from harness.stub_projects import git_repo
from harness.stub_projects import stub_project

from evalrun.reports_out.terminal import Console
from evalrun.results import EvalResult, Status


def _one_check(name: str = "c", assertions: int = 1) -> str:
    return json_scorer([{"name": name, "assertions": assertions, "passed": True}])


def test_the_update_command_a_run_prints_is_one_the_cli_accepts(project) -> None:
    proj = project({"manifest.toml": eval_entry("a"), "evals/a/score.py": _one_check()})
    first = proj.run("t1")
    assert first.code == 0, first.output
    hint = re.search(r"create it with: (evalrun baseline --update [^\n]+)", first.out)
    assert hint, first.out
    update = proj.run(*shlex.split(hint.group(1))[1:])
    assert update.code == 0, update.output
    assert (proj.root / "baselines" / "t1.toml").exists()
    (proj.root / "evals" / "a" / "score.py").write_text(_one_check("c", 3))
    stale = proj.run("t1")
    hint = re.search(r"run: (evalrun baseline --update [^\n]+)", stale.out)
    assert hint, stale.out
    assert proj.run(*shlex.split(hint.group(1))[1:]).code == 0


def test_a_failed_run_does_not_suggest_the_update_that_would_be_refused(project) -> None:
    proj = project(
        {
            "manifest.toml": eval_entry("a") + eval_entry("b"),
            "evals/a/score.py": _one_check(),
            "evals/b/score.py": json_scorer([{"name": "x", "assertions": 1, "passed": False}]),
        }
    )
    r = proj.run("t1")
    assert r.code == 1
    assert "once every eval passes, create it with: evalrun baseline --update t1" in r.out


def test_baseline_update_all_as_documented(project) -> None:
    proj = project(
        {
            "manifest.toml": "[tiers.t1]\n[tiers.t2]\n" + eval_entry("a") + eval_entry("b", tier="t2"),
            "evals/a/score.py": _one_check(),
            "evals/b/score.py": _one_check(),
        }
    )
    r = proj.run("baseline", "--update", "--all")
    assert r.code == 0, r.output
    assert (proj.root / "baselines" / "t1.toml").exists() and (proj.root / "baselines" / "t2.toml").exists()
    bad = proj.run("baseline", "--update", "--eval")
    assert bad.code == 2 and "name a tier (t1, t2, t3) or pass --all" in bad.err


def test_help_shows_placeholders_not_python_types_and_record_only_where_it_applies(project) -> None:
    proj = project({"manifest.toml": ""})
    t1 = proj.run("t1", "--help", env={"COLUMNS": "200"}).out
    t3 = proj.run("t3", "--help", env={"COLUMNS": "200"}).out
    assert "<list[str]>" not in t1 and "[default: 0]" not in t1 and "<int" not in t1
    assert "NAME" in t1 and "PATH" in t1
    assert "--record" not in t1 and "--record" in t3
    refused = proj.run("t1", "--record")
    assert refused.code == 2 and "only t3 makes live calls" in refused.err


def test_help_shows_no_type_after_any_flag_of_any_command(project) -> None:
    """typer 0.29 printed ``--help  <bool>``; every command's real --help shows flags bare."""
    import typer.main

    from evalrun.cli import app

    def paths(command, prefix: tuple[str, ...] = ()):  # noqa: ANN001, ANN202
        yield prefix
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                yield from paths(sub, (*prefix, name))

    proj = project({"manifest.toml": ""})
    seen = 0
    for path in paths(typer.main.get_command(app)):
        out = proj.run(*path, "--help", env={"COLUMNS": "200"}).out
        helps = [line for line in out.splitlines() if "--help" in line]
        assert helps and "Show this message and exit." in helps[0], (path, out)
        assert "<bool>" not in out, (path, out)
        seen += 1
    assert seen >= 14  # the top level, t1/t2/t3/run, merge, dry, baseline, baseline diff, replay serve, ...


def test_dry_of_a_refused_tier_says_no_eval_would_run(project) -> None:
    proj = project(
        {
            "manifest.toml": '[tiers.t3]\nrequire = ["env:EVALRUN_TEST_UNSET_VAR"]\n' + eval_entry("live", tier="t3"),
            "evals/live/score.py": _one_check(),
        }
    )
    r = proj.run("dry", "t3")
    assert r.code == 0, r.output
    assert "tier t3 would be refused" in r.out
    assert "live: would not run: tier t3 would be refused" in r.out
    assert "live: would run" not in r.out


def test_nothing_selected_names_the_filter_that_left_nothing(project) -> None:
    proj = git_repo(project, {"a": "pass.py"})
    r = proj.run("t1", "--changed-since", "HEAD")
    assert r.code == 5, r.output
    assert "--changed-since HEAD" in r.out and "the tier has no evals" not in r.out


def test_shards_run_one_after_another_on_one_machine_merge(project) -> None:
    proj = stub_project(project, {n: "pass.py" for n in ("a", "b", "c")})
    assert proj.run("baseline", "--update", "t1").code == 0
    for i in (1, 2):
        r = proj.run("t1", "--shard", f"{i}/2")
        assert r.code == 0, r.output
    folder = proj.root / ".evalrun" / "results"
    shards = sorted(p.name for p in folder.glob("t1.shard-*.json"))
    assert shards == ["t1.shard-1-of-2.json", "t1.shard-2-of-2.json"]
    merged = proj.run("merge", *(str(folder / s) for s in shards))
    assert merged.code == 0, merged.output
    assert sorted(e["name"] for e in json.loads((folder / "t1.json").read_text())["evals"]) == ["a", "b", "c"]


def test_an_unwritable_output_is_exit_2_before_any_scorer_starts(project, tmp_path: Path) -> None:
    proj = project(
        {"manifest.toml": eval_entry("a"), "evals/a/score.py": "open('ran', 'w').close()\n" + _one_check()}
    )
    for flag in ("--json", "--junit", "--markdown"):
        r = proj.run("t1", flag, str(tmp_path))
        assert r.code == 2, r.output
        assert f"{flag} {tmp_path}: is a directory" in r.err and "Traceback" not in r.err
        assert len(r.err.strip().splitlines()) == 1
    assert not (proj.root / "evals" / "a" / "ran").exists()


def test_an_output_in_a_folder_nothing_can_be_written_in_is_exit_2_before_any_scorer_starts(project) -> None:
    # sysfs holds no files of ours: os.access says yes to root, making a file there says no.
    proj = project(
        {"manifest.toml": eval_entry("a"), "evals/a/score.py": "open('ran', 'w').close()\n" + _one_check()}
    )
    r = proj.run("t1", "--json", "/sys/evalrun-results.json")
    assert r.code == 2, r.output
    assert r.err.startswith("evalrun: error: --json /sys/evalrun-results.json: cannot write in /sys (")
    assert len(r.err.strip().splitlines()) == 1
    assert not (proj.root / "evals" / "a" / "ran").exists()


def _reader(fifo: Path, box: dict[str, bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as handle:  # blocks until evalrun opens it to write
            box["read"] = handle.read()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_fifo_output_is_written_into_and_stays_a_fifo_and_one_without_a_reader_is_one_line(project, tmp_path: Path) -> None:
    proj = project({"manifest.toml": eval_entry("a"), "evals/a/score.py": _one_check()})
    (tmp_path / "out").mkdir()
    fifo = tmp_path / "out" / "results.fifo"
    os.mkfifo(fifo)
    box: dict[str, bytes] = {}
    reader = _reader(fifo, box)
    r = proj.run("t1", "--json", str(fifo))
    reader.join(60)
    assert r.code == 0, r.output
    assert [e["name"] for e in json.loads(box["read"])["evals"]] == ["a"]
    assert stat.S_ISFIFO(fifo.lstat().st_mode)  # not replaced by a regular file
    assert [p.name for p in fifo.parent.iterdir()] == ["results.fifo"]  # no lock or temp file beside it
    alone = proj.run("t1", "--json", str(fifo))  # nobody reads: an error, not a wait
    assert alone.code == 2, alone.output
    assert alone.err.strip() == f"evalrun: error: --json {fifo}: cannot write (no process reads from it); choose a writable path"


def test_an_open_file_name_as_an_output_is_written_into_and_a_link_to_a_file_stays_a_link(project, tmp_path: Path) -> None:
    # /dev/fd/1 rather than /dev/stdout: were the rule broken, the rename would fail
    # in /proc's fd folder instead of making /dev/stdout a regular file, as root.
    proj = project({"manifest.toml": eval_entry("a"), "evals/a/score.py": _one_check()})
    # fresh, not forked: /dev/fd/1 must be a pipe (a fork's stdout is a file)
    piped = subprocess.run(
        [sys.executable, "-m", "evalrun", "t1", "--json", "/dev/fd/1"], cwd=proj.root, env=proj.env({"NO_COLOR": "1"}),
        capture_output=True, text=True, timeout=120,
    )
    assert piped.returncode == 0, piped.stdout + piped.stderr
    start = piped.stdout.index('{\n  "version"')
    assert json.loads(piped.stdout[start:piped.stdout.index("\n}\n", start) + 2])["evals"][0]["name"] == "a"
    assert "evalrun t1: passed (exit 0)" in piped.stdout
    real = tmp_path / "kept" / "real.json"
    real.parent.mkdir()
    real.write_text("old")
    (proj.root / "latest.json").symlink_to(real)
    r = proj.run("t1", "--json", "latest.json")
    assert r.code == 0, r.output
    assert (proj.root / "latest.json").is_symlink()
    assert json.loads(real.read_text())["evals"][0]["name"] == "a"


def test_baseline_update_as_a_command_says_the_form_that_works(project) -> None:
    proj = project({"manifest.toml": eval_entry("a"), "evals/a/score.py": _one_check()})
    r = proj.run("baseline", "update", "t1")
    assert (r.code, r.out) == (2, "")
    assert r.err == "evalrun: error: baseline update: --update is an option; run evalrun baseline --update t1\n"
    assert not (proj.root / "baselines").exists()


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_names_the_evals_that_are_running() -> None:
    console = Console(_Terminal(), env={"TERM": "xterm"})
    console.start_progress(3, "t1", calls=lambda name: 3 if name == "beta[mini]" else None)
    try:
        console.eval_started("alpha")
        console.eval_started("beta[mini]")
        # The live line's text is rendered from running_text() at every refresh (evalrun.reports_out.terminal).
        assert console.running_text() == "alpha, beta[mini] 3 calls"
        console.eval_finished(EvalResult(name="alpha", tier="t1", dir="a", status=Status.PASSED))
        assert console.running_text() == "beta[mini] 3 calls"
    finally:
        console.stop_progress()
