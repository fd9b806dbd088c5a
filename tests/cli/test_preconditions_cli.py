"""Probes, skips, tier guards and services through the real CLI."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from harness import STUBS, an_eval, manifest
from harness.manifest_builder import EvalBlock
from harness.stub_projects import gone, stub_project

PG_SCORER = """
import os
import psycopg
from evalrun import scorer
with scorer.check("database answers") as c:
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        c.equal(conn.execute("select 40 + 2").fetchone()[0], 42)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unmet_probe_skips_loudly_and_exits_4(project) -> None:
    proj = stub_project(
        project,
        {"needs-key": ("pass.py", 'requires = ["env:EVALRUN_TEST_ABSENT_KEY"]'), "plain": "pass.py"},
    )
    r = proj.run("t1")
    assert r.code == 4, r.output
    assert "SKIP        needs-key  env EVALRUN_TEST_ABSENT_KEY is not set" in r.out
    assert "not checked (1):" in r.out and "skipped     needs-key: env EVALRUN_TEST_ABSENT_KEY is not set" in r.out
    assert "1 passed, 0 failed, 1 skipped" in r.out.splitlines()
    res = proj.eval_result("needs-key")
    assert (res["status"], res["message"]) == ("skipped", "env EVALRUN_TEST_ABSENT_KEY is not set")


def test_skips_fail_policy_and_no_skips_flag_turn_skips_into_failures(project) -> None:
    proj = stub_project(project, {"needs-key": ("pass.py", 'requires = ["env:EVALRUN_TEST_ABSENT_KEY"]')})
    r = proj.run("t1", "--no-skips")
    assert r.code == 1, r.output
    assert "skips are failures here: env EVALRUN_TEST_ABSENT_KEY is not set" in r.out
    assert proj.eval_result("needs-key")["status"] == "failed"
    manifest = proj.root / "manifest.toml"
    manifest.write_text('[tiers.t1]\nskips = "fail"\n\n' + manifest.read_text())
    assert proj.run("t1").code == 1


def test_unmet_tier_guard_refuses_the_tier_and_starts_no_scorer(project) -> None:
    proj = stub_project(
        project,
        {"a": "marker.py"},
        tiers='[tiers.t1]\nrequire = ["env:EVALRUN_TEST_ORG_ID"]\n',
    )
    marker = proj.root / "ran.txt"
    r = proj.run("t1", env={"MARKER": str(marker)})
    assert r.code == 2, r.output
    assert "tier t1 requires env:EVALRUN_TEST_ORG_ID: env EVALRUN_TEST_ORG_ID is not set; refusing" in r.err
    assert not marker.exists()
    assert proj.run("t1", env={"MARKER": str(marker), "EVALRUN_TEST_ORG_ID": "acme"}).code == 0
    assert marker.exists()


def test_dry_shows_what_would_skip_and_why(project) -> None:
    proj = stub_project(
        project,
        {"needs-key": ("pass.py", 'requires = ["env:EVALRUN_TEST_ABSENT_KEY"]'), "plain": "pass.py"},
    )
    r = proj.run("dry", "t1")
    assert r.code == 0
    assert "needs-key: would SKIP: env EVALRUN_TEST_ABSENT_KEY is not set" in r.out
    assert "plain: would run" in r.out
    r = proj.run("dry", "t1", "--no-probe")
    assert "needs-key: not probed (--no-probe)" in r.out


def test_named_tcp_probe_reason_names_the_address(project) -> None:
    port = _free_port()
    proj = project(manifest(
        an_eval("x", ["python", "-c", "raise SystemExit(1)"], tier="t2", dir="e", requires=["api"], files={".keep": ""}),
        probes={"api": {"tcp": f"127.0.0.1:{port}", "timeout": 1}},
    ).project())
    r = proj.run("t2")
    assert r.code == 4, r.output
    assert f"SKIP        x  tcp api: connection refused (127.0.0.1:{port})" in r.out


def service_manifest(port: int, *more: EvalBlock, mode: str = "serve", ready_timeout: int = 20, **tables) -> str:
    """Service "api" (the service stub, in ``mode``) used by eval "uses-api" and not by "no-service"."""
    return manifest(
        an_eval("uses-api", tier="t2", dir="e", services=["api"]),
        an_eval("no-service", tier="t2", dir="e"),
        *more,
        services={"api": {"run": ["python", str(STUBS / "service_stub.py"), mode], "ready": f"tcp:127.0.0.1:{port}",
                          "ready_timeout": ready_timeout, "env": {"API_URL": f"http://127.0.0.1:{port}"}}},
        **tables,
    ).text

SERVICE_SCORER = """
import os, socket, time
from evalrun import scorer
with scorer.check("service env is exported only to its users") as c:
    url = os.environ.get("API_URL")
    if os.environ["EVALRUN_EVAL"] == "uses-api":
        c.true(url and url.startswith("http://127.0.0.1:"), f"API_URL={url!r}")
        port = int(url.rsplit(":", 1)[1])
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        c.true(True)
        trigger = os.environ.get("DIE_AFTER")
        if trigger:
            open(trigger, "w").close()
            deadline = time.monotonic() + 60  # until the service has died of it, however long that takes
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=2).close()
                except OSError:
                    break
                time.sleep(0.02)
    else:
        c.equal(url, None)
"""


def _service_project(project, port: int):
    return project(
        {
            "manifest.toml": service_manifest(port),
            "e/score.py": SERVICE_SCORER,
        }
    )


def test_service_starts_for_its_evals_and_stops_after(project) -> None:
    port = _free_port()
    proj = _service_project(project, port)
    pidfile = proj.root / "gc.pid"
    r = proj.run("t2", "-j", "1", env={"PORT": str(port), "GRANDCHILD_PIDFILE": str(pidfile)})
    assert r.code == 0, r.output
    assert "starting service api" in r.out and "stopped service api" in r.out
    assert gone(int(pidfile.read_text()))
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1)


def test_service_not_started_when_its_evals_are_filtered_out(project) -> None:
    port = _free_port()
    proj = _service_project(project, port)
    r = proj.run("t2", "--eval", "no-service", env={"PORT": str(port)})
    assert r.code == 0, r.output
    assert "starting service" not in r.out


def test_service_that_dies_mid_run_fails_its_evals_with_its_log(project) -> None:
    port = _free_port()
    proj = _service_project(project, port)
    trigger = proj.root / "die"
    # a second user of the service, run after the first has killed it
    later = an_eval("uses-api-later", ["python", "-c", "pass"], tier="t2", dir="e", services=["api"])
    (proj.root / "manifest.toml").write_text(service_manifest(port, later))
    r = proj.run("t2", "-j", "1", env={"PORT": str(port), "DIE_TRIGGER": str(trigger), "DIE_AFTER": str(trigger)})
    assert r.code == 1, r.output
    later = proj.eval_result("uses-api-later", "t2")
    assert later["status"] == "failed"
    assert "service api died (exit 1) during the run" in later["message"]
    assert "lost connection to the upstream" in later["message"]
    assert (proj.root / ".evalrun" / "logs" / "api.log").exists()


def test_service_that_never_gets_ready_fails_its_evals(project) -> None:
    port = _free_port()
    proj = _service_project(project, port)
    (proj.root / "manifest.toml").write_text(service_manifest(port, mode="never", ready_timeout=1))
    r = proj.run("t2", env={"PORT": str(port)})
    assert r.code == 1, r.output
    msg = proj.eval_result("uses-api", "t2")["message"]
    assert msg.startswith("service api did not become ready in 1.0 s")
    assert proj.eval_result("no-service", "t2")["status"] == "passed"


def test_sigkilled_run_leaves_a_record_and_the_next_run_stops_the_leftover(project) -> None:
    port = _free_port()
    proj = _service_project(project, port)
    # the test itself connects to the service: not isolated
    (proj.root / "manifest.toml").write_text(service_manifest(port, tiers={"t2": {"network": "host"}}))
    # The scorer hangs until its evalrun is gone, then leaves too: nothing outlives the test.
    (proj.root / "e" / "score.py").write_text(
        "import os, time\nparent = os.getppid()\nwhile os.getppid() == parent:\n    time.sleep(0.05)\n"
    )
    env = proj.env({"PORT": str(port)})
    # fresh, not forked: SIGKILLed mid-run
    first = subprocess.Popen(
        [sys.executable, "-m", "evalrun", "t2", "--eval", "uses-api"],
        cwd=proj.root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    records = proj.root / ".evalrun" / "services"
    deadline = time.monotonic() + 30
    while not (records.exists() and any(records.iterdir())):
        assert time.monotonic() < deadline, "no service record appeared"
        time.sleep(0.05)
    while True:  # the record is written at launch; wait until the service listens
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "the service never listened"
            time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    # The service's record; a running scorer is recorded beside it.
    record = next(r for r in (json.loads(p.read_text()) for p in records.glob("*.json")) if r["kind"] != "scorer")
    leftover = record["pgid"]
    assert not gone(leftover)
    (proj.root / "e" / "score.py").write_text(SERVICE_SCORER)
    r = proj.run("t2", "--eval", "no-service", env={"PORT": str(port)})
    assert r.code == 0, r.output
    assert f"stopped leftover service api (pgid {leftover})" in r.output
    assert gone(leftover)
    assert list(records.iterdir()) == []


@pytest.mark.xdist_group("postgres")  # one embedded PostgreSQL at a time on a small machine
def test_t2_eval_gets_an_embedded_postgres(project) -> None:
    proj = project(manifest(
        an_eval("pg", tier="t2", dir="e", services=["db"], files={"score.py": PG_SCORER}),
        services={"db": {"postgres": "embedded"}},
        probes={"db-up": {"postgres": "${DATABASE_URL}"}},
    ).project())
    r = proj.run("t2")
    assert r.code == 0, r.output
    assert proj.eval_result("pg", "t2")["checks"][0]["assertions"] == 1
