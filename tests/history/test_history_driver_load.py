"""Loading the PostgreSQL driver is not the store's time: EVALRUN_HISTORY_TIMEOUT bounds the talk with the database.

A cold ``import psycopg`` costs hundreds of milliseconds, more on a slow
machine; it used to run on the history step's clock, so a short timeout could
fail a history that answered at once. Here the import is made slow for real:
a fresh evalrun process (not the harness's zygote, which may hold psycopg
already) gets an import hook that sleeps past the timeout the first time
``psycopg`` is looked for and then lets the real psycopg load, which then talks
to the session's embedded PostgreSQL. Loading has a bound of its own
(``LOAD_TIMEOUT``): a driver that never loads is one line, never a hang.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from harness import eval_entry, json_scorer

SLOW_IMPORT = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path

    class SlowPsycopg:
        def find_spec(self, name, path=None, target=None):
            if name == "psycopg":  # the first look: sleep, then let the real finders load the real psycopg
                sys.meta_path.remove(self)
                Path(os.environ["SLOW_MARK"]).write_text("psycopg looked for")
                time.sleep(float(os.environ["SLOW_IMPORT_S"]))
            return None

    sys.meta_path.insert(0, SlowPsycopg())
""")


def _hook(tmp_path: Path) -> Path:
    folder = tmp_path / "hook"
    folder.mkdir()
    (folder / "slow_psycopg.py").write_text(SLOW_IMPORT)
    return folder


def test_a_slow_psycopg_import_does_not_count_against_the_history_timeout(project, postgres_database, tmp_path) -> None:
    p = project({"manifest.toml": "[tiers.t1]\n" + eval_entry("a"),
                 "evals/a/score.py": json_scorer([{"name": "one", "assertions": 1, "passed": True}])})
    mark = tmp_path / "looked-for"
    env = p.env({"EVALRUN_HISTORY_URL": postgres_database, "EVALRUN_HISTORY_TIMEOUT": "1.5", "NO_COLOR": "1",
                 "PYTHONPATH": str(_hook(tmp_path)), "SLOW_MARK": str(mark), "SLOW_IMPORT_S": "2.5"})
    proc = subprocess.run([sys.executable, "-c", "import slow_psycopg, evalrun.__main__ as m; m.main()", "t1"],
                          cwd=p.root, env=env, capture_output=True, text=True, timeout=120)
    assert mark.exists(), proc.stdout + proc.stderr  # this process loaded psycopg itself, slowly
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "history:" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    shown = p.run("history", "--json", env={"EVALRUN_HISTORY_URL": postgres_database})
    assert shown.code == 0, shown.output
    assert [r["run_id"] for r in json.loads(shown.out)["runs"]] == [p.results()["run_id"]]


LOAD_NEVER_ENDS = textwrap.dedent("""
    import sys
    from pathlib import Path
    import slow_psycopg  # sleeps for SLOW_IMPORT_S: longer than this test waits
    from evalrun.history import backends
    from evalrun.history.location import parse_history_url
    from evalrun.history.store import HistoryError
    backends.LOAD_TIMEOUT = 0.3
    location = parse_history_url(sys.argv[1], Path("."), "test")._replace(timeout=10.0)  # the store's own bound
    try:
        backends.use_store(location, lambda store: store.runs())
    except HistoryError as exc:
        print(exc)
""")


def test_a_driver_that_never_loads_is_one_line_within_its_own_bound(postgres_database, tmp_path) -> None:
    script = tmp_path / "load.py"
    script.write_text(LOAD_NEVER_ENDS)
    env = {"PYTHONPATH": str(_hook(tmp_path)), "SLOW_MARK": str(tmp_path / "mark"), "SLOW_IMPORT_S": "3600",
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(script), postgres_database], env=env, capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"{postgres_database}: psycopg did not load within 0.3 s; is it installed whole?", (
        proc.stdout + proc.stderr)
