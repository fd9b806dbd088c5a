"""Services for t2: real stub servers, a real SIGKILLed driver, a real embedded PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from harness import STUBS, an_eval, finishes, manifest
from harness.simulation import simulated_env, simulated_reap

from evalrun.errors import ManifestError
from evalrun.manifest import load_manifest
from harness.said import reaped, stopped
from evalrun.leftovers import remove_pidfile, write_pidfile
from evalrun.services.manager import ServiceManager
from evalrun.services.spec import ServiceSpec
from evalrun.secrets import known_secrets

STUB = STUBS / "service_stub.py"


def tcp_ready(requirement: str, env: Mapping[str, str]) -> tuple[bool, str]:
    """The caller's probe, reduced to what these tests need: tcp:HOST:PORT."""
    _, host, port = requirement.split(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
        return True, ""
    except OSError as exc:
        return False, f"tcp {host}:{port}: {exc.strerror}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stub_spec(name: str, mode: str, *, timeout: float = 10.0, **env: str) -> ServiceSpec:
    env.setdefault("PORT", str(free_port()))
    return ServiceSpec(name, (sys.executable, str(STUB), mode), None, "tcp:127.0.0.1:${PORT}", timeout, env, STUBS)


def manager(tmp_path: Path, *specs: ServiceSpec, environ: Mapping[str, str] | None = None, grace: float = 5.0):
    return ServiceManager(
        {s.name: s for s in specs}, tmp_path / "logs", tmp_path / "state",
        dict(os.environ if environ is None else environ), tcp_ready, grace=grace,
        secrets=known_secrets(os.environ if environ is None else environ).values,
    )


def running(pid: int) -> bool:
    """True while the process exists and is not a zombie awaiting its reaper."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return raw[raw.rfind(")") + 2] not in "ZX"


def group_members(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                raw = (entry / "stat").read_text()
            except OSError:
                continue
            fields = raw[raw.rfind(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] not in "ZX":
                pids.append(int(entry.name))
    return pids


def wait_for(predicate, timeout: float = 10.0):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


# ---------------------------------------------------------------- parsing


def write_manifest(tmp_path: Path, services: str, evals: str = "") -> Path:
    (tmp_path / "svc").mkdir(exist_ok=True)
    (tmp_path / "ev").mkdir(exist_ok=True)
    path = tmp_path / "manifest.toml"
    path.write_text(f'[tiers.t2]\n[probes.api]\ntcp = "127.0.0.1:1"\n{services}\n{evals}')
    return path


def test_parse_services_reads_run_and_postgres_tables(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, """
[services.api]
run = ["python", "server.py"]
dir = "svc"
ready = "tcp:127.0.0.1:${PORT}"
env = { PORT = "8000" }
[services.db]
postgres = "embedded"
ready_timeout = 12
""")
    specs = load_manifest(path).services
    api, db = specs["api"], specs["db"]
    assert api.run == ("python", "server.py") and api.dir == tmp_path / "svc" and api.ready_timeout == 30.0
    assert api.env == {"PORT": "8000"} and api.postgres is None
    assert db.postgres == "embedded" and db.run is None and db.ready is None and db.ready_timeout == 12.0
    assert db.dir == tmp_path and db.url_var == "DATABASE_URL"


BAD_TABLES = [
    ('[services.db]\npostgres = "embedded"\nready_timeout = 0', "services.db.ready_timeout: must be > 0"),
    ('[services.db]\npostgres = "embedded"\nready_timeout = "soon"', "services.db.ready_timeout: must be a number"),
    ('[services.db]\npostgres = "docker"', 'services.db.postgres: must be "embedded"'),
    ('[services.db]\npostgres = "embedded"\nrun = ["x"]', "services.db: set exactly one of run"),
    ("[services.db]\nready = \"api\"", "services.db: set exactly one of run"),
    ('[services.db]\npostgres = "embedded"\ndir = "svc"', "services.db.dir: unknown key"),
    ('[services.api]\nrun = ["x"]\nport = 1', "services.api.port: unknown key; a run service takes run, dir"),
    ("[services.api]\nrun = []", "services.api.run: must be a non-empty array"),
    ('[services.api]\nrun = ["x", ""]', "services.api.run: must be a non-empty array"),
    ('[services.api]\nrun = ["x"]\ndir = "nope"', "services.api.dir: 'nope' does not exist"),
    ('[services.api]\nrun = ["x"]\ndir = ".."', "services.api.dir: '..' lies outside"),
    ('[services.api]\nrun = ["x"]\nready = "nosuch"', "services.api.ready: unknown probe 'nosuch'"),
    ('[services.api]\nrun = ["x"]\nenv = { PORT = 8000 }', "services.api.env.PORT: must be a string"),
    ('[services.api]\nrun = ["x"]\nenv = "PORT=1"', "services.api.env: must be a table"),
    ('[services.".hidden"]\nrun = ["x"]', "services..hidden: service names may use"),
    ('[services.db]\npostgres = "embedded"\nurl_var = "A B"', "services.db.url_var: must be a variable name"),
]


@pytest.mark.parametrize(("table", "message"), BAD_TABLES)
def test_parse_services_refuses_bad_tables_with_one_line(tmp_path: Path, table: str, message: str) -> None:
    path = write_manifest(tmp_path, table)
    with pytest.raises(ManifestError) as info:
        load_manifest(path)
    assert str(info.value).startswith(f"{path}: {message}")
    assert "\n" not in str(info.value)


def test_parse_services_refuses_two_services_exporting_one_variable_to_an_eval(tmp_path: Path) -> None:
    path = write_manifest(
        tmp_path,
        '[services.db]\npostgres = "embedded"\n[services.db2]\npostgres = "embedded"\n',
        manifest(an_eval("e", ["x"], tier="t2", dir="ev", services=["db", "db2"])).text,
    )
    with pytest.raises(ManifestError, match=r'evals\[0\] \("e"\)\.services: db and db2 both export DATABASE_URL'):
        load_manifest(path)


# ---------------------------------------------------------------- lifetime


def test_a_service_starts_once_exports_its_env_and_stops(tmp_path: Path) -> None:
    spec = stub_spec("api", "serve", PORT=str(free_port()), API_URL="http://127.0.0.1:${PORT}/")
    with manager(tmp_path, spec) as services:
        state = services.start("api")
        assert state.ok and state.failure is None, state.failure
        assert services.start("api") is state  # once per invocation
        port = spec.env["PORT"]
        assert services.env_for(["api"]) == {"PORT": port, "API_URL": f"http://127.0.0.1:{port}/"}
        assert services.failure_for(["api"]) is None
        assert "listening on" in (tmp_path / "logs" / "api.log").read_text()
        record = json.loads(next((tmp_path / "state").glob("api.*.json")).read_text())
        assert record["pid"] == state.pid and record["pgid"] == state.pgid and record["proc_start"] > 0
        lines = stopped(services)
        assert lines == [f"stopped service api (pgid {state.pgid})"]
        assert not running(state.pid) and not group_members(state.pgid)
        assert list((tmp_path / "state").iterdir()) == []
        assert stopped(services) == []  # twice is harmless


def test_failure_for_names_a_service_that_was_never_started(tmp_path: Path) -> None:
    with manager(tmp_path, stub_spec("api", "serve")) as services:
        assert services.failure_for(["api"]) == "service api was not started by this run"


def test_a_service_that_never_becomes_ready_fails_with_its_log_tail(tmp_path: Path) -> None:
    with manager(tmp_path, stub_spec("slow", "never", timeout=1.0)) as services:
        begun = time.monotonic()
        state = services.start("slow")
        assert time.monotonic() - begun >= 1.0  # it did wait its ready_timeout
        assert not state.ok
        assert state.failure.startswith(
            "service slow did not become ready in 1.0 s: starting up | waiting for config from the control plane"
        )
        assert "(last check: tcp 127.0.0.1:" in state.failure and "\n" not in state.failure
        assert services.failure_for(["slow"]) == state.failure
        assert services.env_for(["slow"]) == {}
        assert list((tmp_path / "state").iterdir()) == []  # stopped at once, record gone
        assert stopped(services) == []


def test_a_service_that_exits_before_ready_says_so(tmp_path: Path) -> None:
    with manager(tmp_path, stub_spec("api", "crash")) as services:
        state = services.start("api")
    assert state.failure == "service api exited (exit 3) before becoming ready: error: config key 'port' is missing"


def test_a_service_that_dies_mid_run_is_reported_with_exit_code_and_log(tmp_path: Path) -> None:
    trigger = tmp_path / "die-now"
    with manager(tmp_path, stub_spec("api", "serve", DIE_TRIGGER=str(trigger))) as services:
        assert services.start("api").ok
        assert services.failure_for(["api"]) is None
        trigger.touch()
        message = wait_for(lambda: services.failure_for(["api"]))
        assert message.startswith("service api died (exit 1) during the run: listening on 127.0.0.1:")
        assert message.endswith("| fatal: lost connection to the upstream, exiting")
        assert services.failure_for(["api"]) == message


def test_without_ready_a_service_counts_as_ready_once_started(tmp_path: Path) -> None:
    # A ready timeout of an hour: were start() to wait for a readiness that is never checked, the
    # thread below would still be waiting when the join gives up (a hang detector, not a speed limit).
    spec = ServiceSpec("api", (sys.executable, str(STUB), "never"), None, None, 3600.0, {}, tmp_path)
    with manager(tmp_path, spec) as services:
        states = []
        starter = threading.Thread(target=lambda: states.append(services.start("api")), daemon=True)
        starter.start()
        starter.join(120)
        assert states and states[0].ok, "start() waited for a readiness no check decides"


def test_a_ready_check_that_raises_is_a_reason_not_a_crash(tmp_path: Path) -> None:
    def broken(requirement: str, env: Mapping[str, str]) -> tuple[bool, str]:
        raise RuntimeError("password=hunter2")

    spec = stub_spec("api", "serve", timeout=0.5)
    with ServiceManager({"api": spec}, tmp_path / "logs", tmp_path / "state", dict(os.environ), broken,
                        secrets=known_secrets(os.environ).values) as services:
        failure = services.start("api").failure
    assert "(last check: ready check raised RuntimeError;" in failure and "hunter2" not in failure


def test_stop_all_from_another_thread_interrupts_a_start(tmp_path: Path) -> None:
    import threading

    services = manager(tmp_path, stub_spec("slow", "never", timeout=3600.0))
    states = []
    starter = threading.Thread(target=lambda: states.append(services.start("slow")), daemon=True)
    starter.start()
    wait_for(lambda: list((tmp_path / "state").glob("slow.*.json")))
    pid = json.loads(next((tmp_path / "state").glob("slow.*.json")).read_text())["pid"]
    assert len(stopped(services)) == 1
    starter.join(timeout=60)  # not the hour's ready_timeout: stop_all ended the wait
    assert not starter.is_alive(), "start() still waits for a service stop_all stopped"
    assert states[0].failure == "service slow was stopped: the run is stopping"
    assert not running(pid) and stopped(services) == []
    assert services.start("slow").failure == states[0].failure


def test_a_missing_program_is_one_line(tmp_path: Path) -> None:
    spec = ServiceSpec("api", ("no-such-server-xyz",), None, None, 5.0, {}, tmp_path)
    with manager(tmp_path, spec) as services:
        state = services.start("api")
    assert state.failure == "service api: program not found: no-such-server-xyz (run[0] of [services.api])"


def test_an_unset_reference_names_the_variable_and_no_value_is_written(tmp_path: Path) -> None:
    secret = "sk-very-secret-value-123"
    environ = {**os.environ, "SERVICE_TOKEN": secret}
    ok = stub_spec("api", "serve", TOKEN="${SERVICE_TOKEN}")
    bad = stub_spec("other", "serve", TOKEN="${MISSING_TOKEN_VAR}")
    with manager(tmp_path, ok, bad, environ=environ) as services:
        assert services.start("api").ok
        assert services.env_for(["api"])["TOKEN"] == secret
        failed = services.start("other")
        assert failed.failure == (
            "service other: env.TOKEN uses ${MISSING_TOKEN_VAR}, which is not set; export it or remove it"
        )
        record = next((tmp_path / "state").glob("api.*.json")).read_text()
        lines = stopped(services)
    assert secret not in record and secret not in " ".join(lines)


def test_stop_all_leaves_no_process_of_the_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    with manager(tmp_path, stub_spec("api", "serve", GRANDCHILD_PIDFILE=str(pidfile))) as services:
        state = services.start("api")
        grandchild = int(pidfile.read_text())
        assert running(grandchild)
        stopped(services)
    assert not running(grandchild) and not running(state.pid) and not group_members(state.pgid)


def test_a_service_ignoring_term_is_killed_after_the_grace(tmp_path: Path) -> None:
    with manager(tmp_path, stub_spec("api", "serve", IGNORE_TERM="1"), grace=0.5) as services:
        state = services.start("api")
        begun = time.monotonic()
        lines = stopped(services)
    assert time.monotonic() - begun >= 0.5  # it did wait the grace before the KILL
    assert lines == [f"stopped service api (pgid {state.pgid}); it ignored the stop request for 0.5 s and was killed"]
    assert not group_members(state.pgid)


def test_leaving_the_with_block_on_ctrl_c_stops_services(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        with manager(tmp_path, stub_spec("api", "serve")) as services:
            state = services.start("api")
            raise KeyboardInterrupt
    assert not running(state.pid) and not group_members(state.pgid)
    assert list((tmp_path / "state").iterdir()) == []


# ---------------------------------------------------------------- leftovers


def run_driver_and_sigkill(tmp_path: Path, *args: str, platform: str = "linux") -> dict:
    out = tmp_path / "driver.json"
    driver = subprocess.Popen(
        [sys.executable, str(STUBS / "service_driver.py"), str(tmp_path / "state"), str(tmp_path / "logs"),
         str(out), *args],
        cwd=tmp_path, env=None if platform == "linux" else simulated_env(platform, dict(os.environ)),
    )
    try:
        info = json.loads(wait_for(lambda: out.exists() and out.read_text(), timeout=30))
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    assert info["ok"], info["failure"]
    return info


def test_a_sigkilled_run_leaves_a_record_that_the_next_run_reaps(tmp_path: Path) -> None:
    info = run_driver_and_sigkill(tmp_path, "stub", str(free_port()))
    assert running(info["pid"])  # orphaned, still serving: the reason records exist
    assert len(list((tmp_path / "state").glob("api.*.json"))) == 1
    lines = reaped(tmp_path / "state", grace=2.0)
    assert lines == [f"stopped leftover service api (pgid {info['pgid']}) from an earlier run"]
    assert not running(info["pid"]) and not group_members(info["pgid"])
    assert list((tmp_path / "state").iterdir()) == []
    assert reaped(tmp_path / "state") == []


def _proc_start(pid: int) -> int:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return int(raw[raw.rfind(")") + 2:].split()[19])


def _write_record(state_dir: Path, name: str, pid: int, proc_start: int, owner: int, owner_start: int) -> Path:
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / f"{name}.{owner}.json"
    path.write_text(json.dumps({"version": 1, "name": name, "kind": "run", "pid": pid, "pgid": pid,
                                "proc_start": proc_start, "owner_pid": owner, "owner_start": owner_start,
                                "data_dir": None}))
    return path


def test_stale_records_are_removed_without_signalling_anyone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)  # plays a reused pid
    try:
        _write_record(state, "dead", dead_pid, 1, dead_pid, 1)
        _write_record(state, "reused", bystander.pid, _proc_start(bystander.pid) - 7, dead_pid + 1, 1)
        (state / "junk.json").write_text("{not json")
        (state / "list.json").write_text("[1, 2]")  # JSON, but no record
        assert reaped(state) == []
        assert list(state.iterdir()) == []
        assert bystander.poll() is None  # the unrelated process is untouched
    finally:
        bystander.kill()
        bystander.wait()


def test_a_record_that_is_a_fifo_or_a_folder_is_passed_over_not_waited_on(tmp_path: Path) -> None:
    # Anything the project's scorers can write may sit in .evalrun/services/: a FIFO
    # opened plainly would block the next run before its first eval.
    state = tmp_path / "state"
    state.mkdir()
    os.mkfifo(state / "pipe.json")
    (state / "folder.json").mkdir()
    assert finishes(lambda: reaped(state)) == []
    assert sorted(p.name for p in state.iterdir()) == ["folder.json"]


def test_a_record_half_written_when_its_run_was_killed_is_removed_and_a_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    # The temporary name write_pidfile really uses is one the sweep recognises.
    import evalrun.atomic as atomic
    seen: list[str] = []
    real_replace = os.replace
    monkeypatch.setattr(atomic.os, "replace", lambda src, dst: (seen.append(Path(src).name), real_replace(src, dst)))
    write_pidfile(state / "api.json", "api", "run", os.getpid(), os.getpgid(0), None)
    monkeypatch.undo()
    remove_pidfile(state / "api.json")
    assert len(seen) == 1
    me = os.getpid()
    live = state / seen[0]
    live.write_text('{"version": 1, "na')  # what a kill mid-write leaves, by a writer still running
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = state / seen[0].replace(f"owner-{me}-{_proc_start(me)}.", f"owner-{int(gone.stdout)}-1.")
    assert dead.name != live.name
    dead.write_text('{"version": 1, "na')
    assert reaped(state) == []
    assert sorted(p.name for p in state.iterdir()) == [live.name]


def test_orphans_of_a_dead_leader_are_reaped_by_their_group(tmp_path: Path) -> None:
    # The shell leads a group, leaves a sleep in it, and exits when its stdin closes.
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; read x"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    orphan = int(leader.stdout.readline())
    _write_record(tmp_path / "state", "api", leader.pid, _proc_start(leader.pid), 1 << 22, 1)
    leader.stdin.close()
    leader.wait()
    assert running(orphan)
    lines = reaped(tmp_path / "state", grace=2.0)
    assert lines == [f"stopped leftover service api (pgid {leader.pid}) from an earlier run"]
    assert not running(orphan)


def test_only_folders_marked_as_ours_are_deleted(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    record = _write_record(tmp_path / "state", "db", 1 << 22, 1, 1 << 22, 1)
    record.write_text(record.read_text().replace('"data_dir": null', f'"data_dir": "{precious}"'))
    assert reaped(tmp_path / "state") == []
    assert precious.is_dir() and not record.exists()


def test_a_record_of_a_still_running_invocation_is_left_alone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    service = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        me = os.getpid()
        record = _write_record(state, "api", service.pid, _proc_start(service.pid), me, _proc_start(me))
        assert reaped(state) == []
        assert record.exists() and service.poll() is None
    finally:
        service.kill()
        service.wait()


# ---------------------------------------------------------------- embedded PostgreSQL


@pytest.mark.xdist_group("postgres")  # one embedded PostgreSQL at a time on a small machine
def test_embedded_postgres_serves_a_url_and_leaves_nothing_behind(tmp_path: Path) -> None:
    import psycopg

    from evalrun.sandbox import mechanism

    spec = ServiceSpec("db", None, "embedded", None, 30.0, {"PGURL": "${DATABASE_URL}"}, tmp_path)
    restricted = mechanism("t2")[0] is not None  # started as under the isolation fallback, where the kernel offers it
    with manager(tmp_path, spec) as services:
        if restricted:
            services.restrict("t2", [])
        state = services.start("db")
        assert state.ok, state.failure
        url = services.env_for(["db"])["DATABASE_URL"]
        assert url.startswith("postgresql://postgres@127.0.0.1:") and services.env_for(["db"])["PGURL"] == url
        with psycopg.connect(url, connect_timeout=5) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        assert services.tcp_ports() == [int(url.rsplit(":", 1)[1].split("/")[0])]  # what a t2 scorer may reach
        if restricted:  # serving under seccomp (mode 2: a filter) and Landlock, with no new privileges
            status = dict(line.split(":\t", 1) for line in open(f"/proc/{state.pid}/status").read().splitlines()
                          if ":\t" in line)
            assert (status["Seccomp"].strip(), status["NoNewPrivs"].strip()) == ("2", "1")
        if os.geteuid() == 0:  # PostgreSQL refuses root: it must run as another user
            assert os.stat(f"/proc/{state.pid}").st_uid != 0
        assert state.data_dir is not None and state.data_dir.is_dir()
        lines = stopped(services)
    assert lines == [f"stopped service db (pgid {state.pgid}); removed its temporary cluster"]
    assert not running(state.pid) and not group_members(state.pgid)
    assert not state.data_dir.exists()
    assert "received fast shutdown request" in (tmp_path / "logs" / "db.log").read_text()


@pytest.mark.xdist_group("postgres")  # one embedded PostgreSQL at a time on a small machine
@pytest.mark.parametrize("platform", ["linux", "macos"])
def test_embedded_postgres_left_by_a_sigkilled_run_is_reaped(tmp_path: Path, platform: str) -> None:
    # On macOS (simulated: no /proc) the killed run's lock tells it is dead, and ps's start times that the
    # postmaster is still the one its pidfile names; both the killed run and the reaper are simulated.
    info = run_driver_and_sigkill(tmp_path, "postgres", platform=platform)
    assert running(info["pid"]) and Path(info["data_dir"]).is_dir()
    if platform == "linux":
        lines = reaped(tmp_path / "state")
    else:
        lines = simulated_reap(platform, tmp_path / "state")
    assert lines == [f"stopped leftover service db (pgid {info['pgid']}) from an earlier run"]
    assert not running(info["pid"]) and not group_members(info["pgid"])
    assert not Path(info["data_dir"]).exists()
    assert list((tmp_path / "state").iterdir()) == []  # the record and the killed run's lock are gone
