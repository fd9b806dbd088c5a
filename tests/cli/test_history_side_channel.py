"""The history is a side channel: a store that is broken, full, read-only, locked or silent never changes a verdict.

Against real things only: a read-only bind mount and a full tmpfs (as root;
skipped loudly otherwise), a SQLite file locked by another connection, the
session's embedded PostgreSQL with a table lock held by another session, and
the same server's backend process stopped (SIGSTOP) so it never answers. A
run's history failure is one warning line naming the store (no password) and
the reason, and the run's own exit code; ``evalrun history`` and ``evalrun
report`` fail in one line with exit 2.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from harness import eval_entry, json_scorer

MANIFEST = "[tiers.t1]\n" + eval_entry("a")
SCORER = json_scorer([{"name": "one", "assertions": 1, "passed": True}])
# The whole history step's limit: each wait within it (SQLite's busy timeout, PostgreSQL's statement timeout) is
# half, a PostgreSQL lock wait 0.4 of it. A lock held for the whole test fails that wait whatever its length; the
# rest of the limit is the margin for the step's other work: opening a SQLite file (SQLite is imported before the
# fork) in 0.5 s; connecting and migrating in 0.9 s, under load too (psycopg is imported before the step's clock starts,
# evalrun.history.backends; tests/history/test_history_driver_load.py).
FAST = {"EVALRUN_HISTORY_TIMEOUT": "1"}
PG_FAST = {"EVALRUN_HISTORY_TIMEOUT": "1.5"}


def make(project):
    return project({"manifest.toml": MANIFEST, "evals/a/score.py": SCORER})


def history_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "history:" in line or "HISTORY" in line]


def assert_one_warning(outcome, store: str, reason: str, secret: str | None = None) -> None:
    assert outcome.code == 0, outcome.output
    lines = history_lines(outcome.output)
    assert len(lines) == 1, outcome.output
    assert lines[0].startswith(f"history: not recorded: {store}"), lines
    assert reason in lines[0].lower(), lines
    assert "internal error" not in outcome.output and "Traceback" not in outcome.output
    assert "passed (exit 0)" in outcome.out
    if secret:
        assert secret not in outcome.output


def assert_commands_fail_in_one_line(proj, env: dict[str, str], store: str) -> None:
    shown = proj.run("history", env=env, timeout=60)
    assert shown.code == 2, shown.output
    assert shown.err.count("\n") == 1 and store in shown.err and "internal error" not in shown.err, shown.err
    page = proj.run("report", "--html", "page.html", env=env, timeout=60)
    assert page.code == 2, page.output
    assert store in page.err and "internal error" not in page.err and "Traceback" not in page.output, page.err


# ---------------------------------------------------------------- SQLite on real filesystems


def _mount(args: list[str]) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: cannot mount ({' '.join(args)}): {proc.stderr.strip()} (needs root)")


@pytest.fixture
def mounts():
    made: list[Path] = []
    yield made
    for point in reversed(made):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30)


def _need_mount() -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("SKIPPED LOUDLY: a read-only or full filesystem needs root and mount(8); chmod does not bind root")


def test_a_read_only_history_is_one_warning_and_the_runs_own_exit_code(project, tmp_path, mounts) -> None:
    _need_mount()
    proj = make(project)
    source, point = tmp_path / "src", tmp_path / "ro"
    source.mkdir()
    point.mkdir()
    env = {"EVALRUN_HISTORY_URL": f"sqlite:{point / 'history.sqlite'}", **FAST}
    assert proj.run("t1", env={"EVALRUN_HISTORY_URL": f"sqlite:{source / 'history.sqlite'}"}).code == 0
    _mount(["--bind", str(source), str(point)])
    mounts.append(point)
    _mount(["-o", "remount,bind,ro", str(point)])
    store = str(point / "history.sqlite")
    assert_one_warning(proj.run("t1", env=env), store, "read-only filesystem")
    html = proj.run("t1", "--html", "run.html", env=env)
    assert_one_warning(html, store, "read-only filesystem")
    assert (proj.root / "run.html").exists()
    # Reading a read-only history works (WAL needs its -shm; without one, reading is refused in one line).
    shown = proj.run("history", env=env)
    assert shown.code in (0, 2) and "internal error" not in shown.output, shown.output


def test_a_full_disk_under_the_history_is_one_warning(project, tmp_path, mounts) -> None:
    _need_mount()
    proj = make(project)
    point = tmp_path / "full"
    point.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=64k", "tmpfs", str(point)])
    mounts.append(point)
    fd = os.open(point / "filler", os.O_WRONLY | os.O_CREAT)
    try:  # fill it: every later write is ENOSPC
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    env = {"EVALRUN_HISTORY_URL": f"sqlite:{point / 'history.sqlite'}", **FAST}
    store = str(point / "history.sqlite")
    assert_one_warning(proj.run("t1", env=env), store, "full")
    assert_one_warning(proj.run("t1", "--html", "run.html", env=env), store, "full")
    assert_commands_fail_in_one_line(proj, env, store)


def test_a_sqlite_history_locked_past_the_wait_is_one_warning(project) -> None:
    proj = make(project)
    assert proj.run("t1").code == 0
    path = proj.root / ".evalrun" / "history.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO evalrun_schema (version) SELECT version FROM evalrun_schema")  # hold it for real
        assert_one_warning(proj.run("t1", env=FAST, timeout=25), str(path), "locked")
        assert_one_warning(proj.run("t1", "--html", "run.html", env=FAST, timeout=25), str(path), "locked")
        assert_commands_fail_in_one_line(proj, FAST, str(path))
    finally:
        holder.close()


def test_an_unopenable_history_is_one_line_in_every_command(project) -> None:
    proj = make(project)
    (proj.root / "not-a-file").mkdir()  # a folder where the database file should be
    env = {"EVALRUN_HISTORY_URL": "sqlite:not-a-file"}
    store = str(proj.root / "not-a-file")
    outcome = proj.run("t1", env=env)
    assert outcome.code == 0 and len(history_lines(outcome.output)) == 1, outcome.output
    assert_commands_fail_in_one_line(proj, env, store)


# ---------------------------------------------------------------- the variable set but empty


def test_an_empty_history_url_variable_is_a_warning_and_no_throwaway_file(project) -> None:
    proj = make(project)
    outcome = proj.run("t1", env={"EVALRUN_HISTORY_URL": ""})
    assert outcome.code == 0, outcome.output
    [line] = history_lines(outcome.output)
    assert "EVALRUN_HISTORY_URL is set but empty" in line
    assert not (proj.root / ".evalrun" / "history.sqlite").exists()  # no silent fallback to a file on the runner
    shown = proj.run("history", env={"EVALRUN_HISTORY_URL": " "})
    assert shown.code == 2 and "EVALRUN_HISTORY_URL is set but empty" in shown.err, shown.output


# ---------------------------------------------------------------- PostgreSQL that holds a lock or never answers


def _with_password(url: str, password: str) -> str:
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{password}@", 1)


def _shown(url: str) -> str:
    return url.replace("postgresql://postgres@", "postgresql://postgres:***@", 1)


def test_a_postgres_table_locked_by_another_session_is_one_warning(project, postgres_database) -> None:
    import psycopg

    proj = make(project)
    password = "pw-" + os.urandom(4).hex()
    env = {"EVALRUN_HISTORY_URL": _with_password(postgres_database, password), **PG_FAST}
    assert proj.run("t1", env=env).code == 0  # the schema exists, one run recorded
    with psycopg.connect(postgres_database) as holder:
        holder.execute("LOCK TABLE evalrun_runs IN ACCESS EXCLUSIVE MODE")  # held until the block ends
        outcome = proj.run("t1", env=env, timeout=30)
        assert_one_warning(outcome, _shown(postgres_database), "lock", secret=password)
        assert_commands_fail_in_one_line(proj, env, _shown(postgres_database))
        holder.rollback()


def _backend_waiting(conn, database: str) -> int | None:
    row = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'evalrun-history' AND datname = %s "
        "AND wait_event_type = 'Lock'", (database,)).fetchone()
    return row[0] if row else None


@pytest.mark.parametrize("fate", ["stopped", "terminated"])
def test_a_postgres_backend_that_never_answers_or_dies_mid_write_is_a_bounded_warning(
    project, postgres_database, fate: str
) -> None:
    """The server's process for evalrun's connection, mid-write, is stopped (SIGSTOP: no server-side timeout can
    fire, it never answers) or terminated (the server ends the session); either way the run ends with one warning."""
    import psycopg

    proj = make(project)
    # The test must see the backend wait on the lock (it polls every 20 ms) before that wait gives up, at 0.8 s.
    env = {"EVALRUN_HISTORY_URL": postgres_database, "EVALRUN_HISTORY_TIMEOUT": "2"}
    assert proj.run("t1", env=env).code == 0
    database = postgres_database.rsplit("/", 1)[1]
    outcome: list = []
    stopped: list[int] = []
    with psycopg.connect(postgres_database, autocommit=True) as watcher, psycopg.connect(postgres_database) as holder:
        holder.execute("LOCK TABLE evalrun_runs IN ACCESS EXCLUSIVE MODE")
        runner = threading.Thread(target=lambda: outcome.append(proj.run("t1", env=env, timeout=40)))
        runner.start()
        try:
            until = time.monotonic() + 30
            while (pid := _backend_waiting(watcher, database)) is None and runner.is_alive():
                assert time.monotonic() < until, "evalrun's history session never waited on the lock"
                time.sleep(0.02)
            if pid is not None and fate == "stopped":
                os.kill(pid, signal.SIGSTOP)  # the server's side of evalrun's connection: alive, never answering
                stopped.append(pid)
            elif pid is not None:
                watcher.execute("SELECT pg_terminate_backend(%s)", (pid,))
            holder.rollback()
            runner.join(60)
        finally:
            for pid in stopped:
                os.kill(pid, signal.SIGCONT)
    assert not runner.is_alive()
    [result] = outcome
    assert result.code == 0, result.output
    [line] = history_lines(result.output)
    assert line.startswith(f"history: not recorded: {postgres_database}"), line


# ---------------------------------------------------------------- SIGTERM while the history waits


@pytest.mark.parametrize("command", ["run", "merge", "baseline"])
def test_sigterm_while_the_history_waits_is_130_and_the_results_file_agrees(project, command: str) -> None:
    """A PostgreSQL "server" that accepts and never answers holds the run in its history step; SIGTERM then."""
    proj = make(project)
    args = ["t1"]
    if command == "merge":
        assert proj.run("t1", "--shard", "1/1").code == 0
        args = ["merge", str(proj.root / ".evalrun" / "results" / "t1.shard-1-of-1.json")]
    if command == "baseline":
        args = ["baseline", "--update", "t1"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    env = {"EVALRUN_HISTORY_URL": f"postgresql://u:pw@127.0.0.1:{port}/h", "EVALRUN_HISTORY_TIMEOUT": "3600"}
    # fresh, not forked: SIGTERM sent mid-run
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalrun", *args], cwd=proj.root, env=proj.env({"NO_COLOR": "1", **env}),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        listener.settimeout(60)
        accepted.append(listener.accept()[0])  # evalrun is in its history step: the scorers are done
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for conn in accepted:
            conn.close()
        listener.close()
    assert proc.returncode == 130, out + err
    assert "interrupted" in out + err and "Traceback" not in err
    results = json.loads((proj.root / ".evalrun" / "results" / "t1.json").read_text())
    assert results["interrupted"] is True and results["exit_code"] == 130
    assert [e["status"] for e in results["evals"]] == ["passed"]  # what finished stays what it was
    if command == "baseline":
        assert not (proj.root / "baselines" / "t1.toml").exists()  # an interrupted update records nothing
