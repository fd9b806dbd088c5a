"""Two runs in one project at once: the second never takes the first's live services for a killed run's leftovers.

Run on simulated macOS (no ``/proc``: ``harness.simulation``), where evalrun once
read "cannot tell whether its owner lives" as "dead" and deleted the first run's
live PostgreSQL data folder (the first then failed with ``could not open file
"global/pg_filenode.map"``). Linux's answer comes from the same owner lock.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from harness.project import eval_entry
from harness.waiting import wait_until
from harness.simulation import simulated_env, simulated_evalrun, users_own_tmpdir

# Run 1 (eval "uses-db"): write a row, say so, wait for the test's word, then read it on a new connection
# (a new backend reads the cluster's files: a deleted data folder fails here).
USES_DB = """
import os, pathlib, time
import psycopg
from evalrun import scorer
here = pathlib.Path(__file__).parent
url = os.environ["DATABASE_URL"]
with psycopg.connect(url, connect_timeout=10) as conn:
    conn.execute("create table kept (x int)")
    conn.execute("insert into kept values (41)")
(here / "ready").write_text("")
deadline = time.monotonic() + 180
while not (here / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.05)
with scorer.check("the data outlives a second run") as check:
    with psycopg.connect(url, connect_timeout=10) as conn:
        check.equal(conn.execute("select x + 1 from kept").fetchone(), (42,))
"""

QUICK = """
from evalrun import scorer
with scorer.check("quick") as check:
    check.true(True)
"""


@pytest.mark.xdist_group("postgres")  # one embedded PostgreSQL at a time on a small machine
def test_a_second_t2_in_the_project_leaves_the_first_runs_live_postgres_alone_without_proc(project) -> None:
    with users_own_tmpdir() as own_tmp:
        _two_runs_at_once(project, own_tmp)


def _two_runs_at_once(project, own_tmp: Path) -> None:
    proj = project({
        "manifest.toml": ('[tiers.t2]\n[services.db]\npostgres = "embedded"\n'
                          + eval_entry("uses-db", tier="t2", extra='services = ["db"]')
                          + eval_entry("quick", tier="t2")),
        "evals/uses-db/score.py": USES_DB,
        "evals/quick/score.py": QUICK,
    })
    env = simulated_env("macos", proj.env({"TMPDIR": str(own_tmp)}))
    first = subprocess.Popen([sys.executable, "-m", "evalrun", "t2", "-e", "uses-db"], cwd=proj.root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until((proj.root / "evals/uses-db/ready").exists, within=180, what="the first run's scorer beginning")
        records = [json.loads(p.read_text()) for p in (proj.root / ".evalrun/services").glob("db.*.json")]
        assert len(records) == 1 and records[0]["owner_lock"], records
        data_dir = Path(records[0]["data_dir"])
        assert data_dir.is_dir()

        second = simulated_evalrun("macos", proj.root, "t2", "-e", "quick", env=proj.env({"TMPDIR": env["TMPDIR"]}))
        assert second.code in (0, 3), second.output
        assert "leftover" not in second.output and "alone" not in second.output, second.output
        assert data_dir.is_dir()  # the first run's cluster is untouched

        (proj.root / "evals/uses-db/go").write_text("")
        out, _ = first.communicate(timeout=180)
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGINT)
            first.communicate(timeout=60)
    assert first.returncode in (0, 3), out
    assert "network: not isolated" in out
    assert proj.eval_result("uses-db", "t2")["status"] == "passed"
    assert not data_dir.exists()  # and the first run removed it itself when it stopped the service
