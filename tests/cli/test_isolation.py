"""Isolation: t1 and t2 run in a network namespace with only loopback, where the system allows it; elsewhere their
scorers start under seccomp and Landlock (the fallback).

Every listener here is the test's own, on the host's 127.0.0.1; nothing is
sent anywhere else. Inside an isolated run that address is the namespace's own
loopback, where nothing of the host listens: a t1 scorer and a t2 service get
"connection refused", while the scorer still reaches the service evalrun
started (they share that loopback), and the repository's own t2 (embedded
PostgreSQL, the replay proxy) passes inside. The fallback is tested by really
dropping the privilege: evalrun as uid 65534 in a user namespace whose own
``user.max_user_namespaces`` is 0 (tests/stubs/drop_privilege.py), where the
fallback's scorers are proven, with real sockets to the test's own listeners
on the host's 127.0.0.1 (TCP and UDP), to reach nothing but the run's own
service and the replay proxy; and with the fallback taken away too (a seccomp
filter that forbids seccomp and Landlock, as a container's profile can).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import REPO, STUBS, an_eval, manifest, warm_evalrun

DROP = STUBS / "drop_privilege.py"
NAMESPACE = "network: isolated (namespace), except unix sockets bound to a path"
FALLBACK = "network: isolated (seccomp+landlock), except unix sockets bound to a path"


def _why_not_isolated() -> str | None:
    """None when this machine lets evalrun isolate; else why not (asked in a fresh process)."""
    code = ("import os, sys\nfrom evalrun.run.isolation import enter_loopback_namespace\n"
            "why = enter_loopback_namespace()\nprint(why or 'ok')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    out = proc.stdout.strip()
    return None if out == "ok" else (out or proc.stderr.strip())


WHY_NOT = _why_not_isolated()
needs_isolation = pytest.mark.skipif(WHY_NOT is not None, reason=f"this machine cannot isolate: {WHY_NOT}; CI runs as root")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="dropping the privilege needs root (CI runs as root)")


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A TCP listener on the host's 127.0.0.1 that answers "host"; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            with conn:
                conn.sendall(b"host\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        server.close()


REACH_SCORER = """
import json, os, socket
port = int(os.environ["HOST_PORT"])
try:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        got, error = s.recv(16).decode(), None
except OSError as exc:
    got, error = None, f"cannot reach 127.0.0.1:{port}: {exc}"
check = {"name": "reaches the host listener", "assertions": 1, "passed": got == "host\\n", "message": error}
json.dump({"checks": [check]}, open(os.environ["EVALRUN_REPORT"], "w"))
"""


def _t1_manifest(port: int, **tables) -> str:
    return manifest(an_eval("reach", dir="e", env={"HOST_PORT": str(port)}), **tables).text


@needs_isolation
def test_a_t1_scorer_cannot_reach_a_host_listener_and_the_header_says_isolated(project, host_listener: int) -> None:
    proj = project({"manifest.toml": _t1_manifest(host_listener), "e/score.py": REACH_SCORER})
    r = proj.run("t1")
    assert r.code == 1, r.output
    assert r.out.splitlines()[0] == NAMESPACE
    result = proj.eval_result("reach")
    assert "Connection refused" in result["checks"][0]["message"]  # the error the scorer can show
    assert "t1 is isolated (namespace)" in result["message"]  # evalrun says why
    assert proj.results("t1")["network"] == {"isolated": True, "mechanism": "namespace", "reason": None}
    assert 'set network = "host" in [tiers.t1]' in result["message"]


THREADS_SCORER = textwrap.dedent("""\
    import json, os
    inside = os.readlink("/proc/self/ns/net")
    evalrun = os.getppid()  # the process that runs the phase and started this scorer
    tasks = {t: os.readlink(f"/proc/{evalrun}/task/{t}/ns/net") for t in os.listdir(f"/proc/{evalrun}/task")}
    outside = sorted(t for t, ns in tasks.items() if ns != inside)
    json.dump({"checks": [{"name": "every thread of evalrun is inside", "assertions": 1, "passed": not outside,
                           "message": f"{len(tasks)} threads, outside: {outside}"}]}, open(os.environ["EVALRUN_REPORT"], "w"))
""")


@needs_isolation
@pytest.mark.skipif(os.geteuid() != 0, reason="as root the phase runs in evalrun's own threads; otherwise in a forked child")
def test_as_root_every_thread_of_evalrun_is_inside_while_the_phase_runs(project) -> None:
    """The phase's thread entered the namespace, not the process: a thread started before it would stay on the
    host network, and work handed to it would run outside. None is, for a run of two scorers at once."""
    proj = project(manifest(an_eval("a", dir="e"), an_eval("b", dir="e")).project({"e/score.py": THREADS_SCORER}))
    r = proj.run("t1", "-j", "2")
    assert r.code == 0, r.output + json.dumps([proj.eval_result(n)["checks"] for n in "ab"])
    assert r.out.splitlines()[0] == NAMESPACE


@needs_isolation
def test_network_host_opts_a_tier_out_and_the_header_says_why(project, host_listener: int) -> None:
    proj = project({"manifest.toml": _t1_manifest(host_listener, tiers={"t1": {"network": "host"}}),
                    "e/score.py": REACH_SCORER})
    summary = proj.root / "summary.md"
    r = proj.run("t1", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert r.code == 0, r.output
    assert 'network: not isolated: tiers.t1 sets network = "host"' in r.out
    # in CI: an annotation, and the step summary says it too
    assert ('::warning file=manifest.toml,title=evalrun t1 not isolated from the network::'
            'network: not isolated: tiers.t1 sets network = "host"') in r.out.splitlines()
    assert '⚠️ **network: not isolated: tiers.t1 sets network = "host"**' in summary.read_text()
    assert proj.results("t1")["network"] == {"isolated": False, "mechanism": None,
                                             "reason": 'tiers.t1 sets network = "host"'}


SERVICE = """
import os, socket
try:
    with socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=5) as s:
        outcome = "reached the host: " + s.recv(16).decode().strip()
except OSError as exc:
    outcome = f"refused: {exc}"
open(os.environ["OUTCOME"], "w").write(outcome)
server = socket.create_server(("127.0.0.1", int(os.environ["PORT"])))
while True:
    conn, _ = server.accept()
    with conn:
        conn.sendall(b"service\\n")
"""

SERVICE_SCORER = """
import json, os, socket
with socket.create_connection(("127.0.0.1", int(os.environ["PORT"])), timeout=5) as s:
    got = s.recv(16).decode()
outcome = open(os.environ["OUTCOME"]).read()
checks = [
    {"name": "the scorer reaches the service on the shared loopback", "assertions": 1, "passed": got == "service\\n"},
    {"name": "the service cannot reach the host listener", "assertions": 1, "passed": outcome.startswith("refused"),
     "message": outcome},
]
json.dump({"checks": checks}, open(os.environ["EVALRUN_REPORT"], "w"))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_isolation
def test_a_t2_service_cannot_reach_a_host_listener_but_its_scorer_reaches_the_service(project, host_listener: int) -> None:
    port = _free_port()
    outcome = "outcome.txt"
    proj = project({"e/score.py": SERVICE_SCORER, "svc.py": SERVICE})
    written = f"{proj.root}/{outcome}"
    (proj.root / "manifest.toml").write_text(manifest(
        an_eval("svc", tier="t2", dir="e", services=["svc"], env={"PORT": str(port), "OUTCOME": written}),
        services={"svc": {"run": ["python", "svc.py"], "ready": f"tcp:127.0.0.1:{port}", "ready_timeout": 20,
                          "env": {"PORT": str(port), "HOST_PORT": str(host_listener), "OUTCOME": written}}},
    ).text)
    r = proj.run("t2")
    assert r.code == 0, r.output + json.dumps(proj.eval_result("svc", "t2"), indent=1)
    assert NAMESPACE in r.out
    assert (proj.root / outcome).read_text().startswith("refused: [Errno 111] Connection refused")


@needs_isolation
@pytest.mark.xdist_group("postgres")
def test_the_own_t2_passes_isolated_embedded_postgres_and_the_replay_proxy_inside(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "OPENAI_", "ANTHROPIC_"))}
    env["NO_COLOR"] = "1"
    out = tmp_path / "t2.json"
    proc = warm_evalrun(REPO, "t2", "-j", "2", "--json", str(out), env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == NAMESPACE
    results = json.loads(out.read_text())
    assert {e["name"]: e["status"] for e in results["evals"]} == {
        "rls-isolation": "passed", "agent-tools[mini]": "passed", "agent-tools[nano]": "passed",
        "judge-anchors": "passed",
    }
    assert "model calls: replay through http://127.0.0.1:" in proc.stdout


# --- without the privilege ------------------------------------------------------------------


@pytest.fixture
def open_project() -> Iterator[Path]:
    """A project folder uid 65534 can read and write (pytest's own tmp folders are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="isolation-test-", dir="/tmp"))
    try:
        root.chmod(0o777)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _world_usable(path: Path) -> bool:
    """Whether anyone may run ``path``: every folder above it searchable, the file itself readable and executable."""
    path = path.resolve()
    return all(p.stat().st_mode & 0o001 for p in path.parents) and path.stat().st_mode & 0o005 == 0o005


def _nobody_python() -> str | None:
    """A Python of this version that uid 65534 can run (a pyenv under a mode-700 /root is not)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (Path(sys.executable), Path("/usr/bin") / version, Path("/usr/local/bin") / version):
        if candidate.exists() and _world_usable(candidate):
            return str(candidate)
    return None


NOBODY_PYTHON = _nobody_python()
needs_nobody_python = pytest.mark.skipif(
    NOBODY_PYTHON is None, reason=f"no {sys.version_info.major}.{sys.version_info.minor} Python that uid 65534 can run"
)


@pytest.fixture(scope="module")
def nobody_site() -> Iterator[Path]:
    """evalrun and the packages an ``evalrun t1`` imports, copied where uid 65534 can read them.

    The checkout and the virtual environment may sit under a folder only root may enter (a
    ``mktemp -d`` of mode 700, as CI's are): the user the test becomes could import neither.
    Which packages: the ones a real ``evalrun t1`` of a tiny project imports (``-X importtime``).
    """
    import importlib.util
    import site

    folder = Path(tempfile.mkdtemp(prefix="isolation-site-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        probe = folder / "probe"
        _write(probe, manifest(an_eval("p", ["python", "s.py"], dir="e", files={
            "s.py": "from evalrun import scorer\nwith scorer.check('c') as c:\n    c.true(True)\n"})).project())
        # fresh, not forked: what a run imports is the question
        run = subprocess.run([sys.executable, "-X", "importtime", "-m", "evalrun", "t1"], cwd=probe, capture_output=True,
                             text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
        names = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in run.stderr.splitlines() if "|" in line}
        sites = [Path(p).resolve() for p in site.getsitepackages()]
        (folder / "lib").mkdir()
        for name in sorted(n for n in names if not n.startswith("__editable__")):
            spec = importlib.util.find_spec(name) if name.isidentifier() else None
            origin = Path(spec.origin).resolve() if spec is not None and spec.origin not in (None, "built-in", "frozen") else None
            if origin is None or not any(origin.is_relative_to(s) for s in sites):
                continue
            source = origin.parent if origin.name == "__init__.py" or origin.parent.name == name else origin
            target = folder / "lib" / source.name
            if not target.exists():
                (shutil.copytree if source.is_dir() else shutil.copy2)(source, target)
        shutil.copytree(REPO / "evalrun", folder / "lib" / "evalrun", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        for path in (folder / "lib").rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644 | (path.stat().st_mode & 0o111))
        (folder / "lib").chmod(0o755)
        yield folder / "lib"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _as_nobody(root: Path, site_dir: Path, no_user_namespaces: bool, *args: str,
               no_sandbox: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_"))}
    env.update({"HOME": str(root), "NO_COLOR": "1", "TMPDIR": str(root)})
    # evalrun and its packages, copied where the user can read them, for an interpreter outside the venv.
    env["PYTHONPATH"] = str(site_dir)
    env.pop("CI", None)
    flag = (["--no-user-namespaces"] if no_user_namespaces else []) + (["--no-sandbox"] if no_sandbox else [])
    # fresh, not forked: another user, another interpreter, evalrun from a copied site
    return subprocess.run([sys.executable, str(DROP), *flag, "--", str(NOBODY_PYTHON), "-m", "evalrun", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def _nobody_manifest(port: int, udp_port: int | None = None, **tables) -> str:
    env = {"HOST_PORT": str(port)} if udp_port is None else {"UDP_PORT": str(udp_port), "HOST_PORT": str(port)}
    return manifest(an_eval("reach", [NOBODY_PYTHON, "score.py"], dir="e", env=env), **tables).text


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.parent.chmod(0o777)
        path.write_text(text)
        path.chmod(0o666)


@pytest.fixture
def udp_listener() -> Iterator[socket.socket]:
    """A UDP socket on the host's 127.0.0.1: what reaches it can be read back."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.setblocking(False)
        yield sock


def _received(sock: socket.socket) -> list[bytes]:
    got = []
    while True:
        try:
            got.append(sock.recv(100))
        except BlockingIOError:
            return got


# What a scorer tries on the network, each attempt one check that passes when it got through.
TRY_SCORER = """
import json, os, socket, urllib.error, urllib.request

def tcp(port):
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5) as s:
        s.sendall(b"hello\\n")
        return s.recv(16).decode().strip()

def tcp6(port):
    with socket.create_connection(("::1", int(port)), timeout=5) as s:
        return "connected"

def udp(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"from the scorer", ("127.0.0.1", int(port)))
        return "sent"

def proxy(url):
    try:
        with urllib.request.urlopen(url + "/v1/models", timeout=10) as r:
            return f"HTTP {r.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"  # an answer from the proxy, whatever it says

attempts = {"host tcp": (tcp, "HOST_PORT"), "host tcp6": (tcp6, "HOST_PORT"), "host udp": (udp, "UDP_PORT"),
            "service": (tcp, "SERVICE_PORT"), "proxy": (proxy, "EVALRUN_MODEL_URL")}
checks = []
for name, (attempt, var) in attempts.items():
    if var not in os.environ:
        continue
    try:
        got, error = attempt(os.environ[var]), None
    except OSError as exc:
        got, error = None, str(exc) or type(exc).__name__
    except Exception as exc:
        got, error = None, f"{type(exc).__name__}: {exc}"
    checks.append({"name": name, "assertions": 1, "passed": got is not None, "message": error or got})
json.dump({"checks": checks}, open(os.environ["EVALRUN_REPORT"], "w"))
"""


def _checks(root: Path, tier: str) -> tuple[dict[str, tuple[bool, str]], dict]:
    results = json.loads((root / f".evalrun/results/{tier}.json").read_text())
    return {c["name"]: (c["passed"], c["message"]) for c in results["evals"][0]["checks"]}, results


@needs_root
@needs_nobody_python
def test_without_a_namespace_a_t1_scorer_opens_no_ip_socket(
    open_project: Path, host_listener: int, udp_listener: socket.socket, nobody_site: Path
) -> None:
    """uid 65534 with no user namespaces: the scorer starts under seccomp, and TCP, TCP over IPv6 and UDP to
    the test's own listeners on the host's loopback all fail at socket(), while evalrun itself runs on."""
    udp_port = udp_listener.getsockname()[1]
    _write(open_project, {"manifest.toml": _nobody_manifest(host_listener, udp_port), "e/score.py": TRY_SCORER})
    proc = _as_nobody(open_project, nobody_site, True, "t1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == FALLBACK
    checks, results = _checks(open_project, "t1")
    for name in ("host tcp", "host tcp6", "host udp"):
        assert checks.pop(name) == (False, "[Errno 13] Permission denied"), name
    assert all(not passed for passed, _ in checks.values()), checks  # t1's unreachable model URL, if set
    assert _received(udp_listener) == []
    assert results["network"] == {"isolated": True, "mechanism": "seccomp+landlock", "reason": None}
    assert "t1 is isolated (seccomp+landlock): a t1 scorer can open no IP socket" in results["evals"][0]["message"]


T2_SERVICE = SERVICE.replace('os.environ["PORT"]', 'os.environ["SERVICE_PORT"]')  # the t2 service's own port


@needs_root
@needs_nobody_python
def test_without_a_namespace_a_t2_scorer_reaches_the_proxy_and_its_service_only(
    open_project: Path, host_listener: int, udp_listener: socket.socket, nobody_site: Path
) -> None:
    """uid 65534 with no user namespaces, t2: Landlock lets the scorer connect to the replay proxy and to the
    service evalrun started, on the host's own loopback; the host's other listener (TCP) and UDP stay out of reach.
    The service starts restricted too: it cannot reach the host's listener either."""
    service_port, udp_port = _free_port(), udp_listener.getsockname()[1]
    ports = {"SERVICE_PORT": str(service_port), "HOST_PORT": str(host_listener)}
    _write(open_project, manifest(
        an_eval("try", [NOBODY_PYTHON, "score.py"], tier="t2", dir="e", services=["svc"], model=True,
                env={**ports, "UDP_PORT": str(udp_port)}),
        services={"svc": {"run": [NOBODY_PYTHON, "svc.py"], "ready": f"tcp:127.0.0.1:{service_port}", "ready_timeout": 20,
                          "env": {**ports, "OUTCOME": f"{open_project}/outcome.txt"}}},
    ).project({"e/score.py": TRY_SCORER, "svc.py": T2_SERVICE}))
    proc = _as_nobody(open_project, nobody_site, True, "t2")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == FALLBACK
    checks, results = _checks(open_project, "t2")
    assert checks["service"] == (True, "service")
    assert checks["proxy"][0] and checks["proxy"][1].startswith("HTTP "), checks["proxy"]
    assert checks["host tcp"] == (False, "[Errno 13] Permission denied")  # Landlock: not a port of this run
    assert checks["host udp"] == (False, "[Errno 13] Permission denied")  # seccomp: TCP only
    assert _received(udp_listener) == []
    assert results["network"] == {"isolated": True, "mechanism": "seccomp+landlock", "reason": None}
    assert (open_project / "outcome.txt").read_text() == "refused: [Errno 13] Permission denied"


@needs_root
@needs_nobody_python
def test_without_a_namespace_or_the_fallback_the_run_says_why_and_require_isolation_exits_2(
    open_project: Path, host_listener: int, nobody_site: Path
) -> None:
    """No user namespaces, and seccomp and Landlock forbidden (as a container's profile can): the run goes on,
    on the host network, saying why in the header and the results; with require_isolation it is one line, exit 2."""
    _write(open_project, {"manifest.toml": _nobody_manifest(host_listener), "e/score.py": REACH_SCORER})
    proc = _as_nobody(open_project, nobody_site, True, "t1", no_sandbox=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # not isolated: the host listener is reached
    why = ("uid 65534 cannot create a network namespace: unshare: No space left on device; "
           "user namespaces are limited to 0 here (user.max_user_namespaces); "
           "and no fallback: prctl(PR_SET_SECCOMP): Operation not permitted")
    assert f"network: not isolated: {why}" in proc.stdout
    results = json.loads((open_project / ".evalrun/results/t1.json").read_text())
    assert results["network"] == {"isolated": False, "mechanism": None, "reason": why}

    _write(open_project, {"manifest.toml": _nobody_manifest(host_listener, tiers={"t1": {"require_isolation": True}})})
    proc = _as_nobody(open_project, nobody_site, True, "t1", no_sandbox=True)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"t1: require_isolation = true, but the run cannot be isolated: {why}" in lines[0], lines
    assert "reach" not in proc.stdout  # no scorer ran


@needs_root
@needs_nobody_python
def test_an_unprivileged_user_with_user_namespaces_is_isolated(open_project: Path, host_listener: int, nobody_site: Path) -> None:
    _write(open_project, {"manifest.toml": _nobody_manifest(host_listener), "e/score.py": REACH_SCORER})
    proc = _as_nobody(open_project, nobody_site, False, "t1")
    if "unshare(CLONE_NEWUSER)" in proc.stderr:
        pytest.skip(f"this machine allows no user namespace even to root: {proc.stderr.strip()}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == NAMESPACE
    results = json.loads((open_project / ".evalrun/results/t1.json").read_text())
    assert "Connection refused" in results["evals"][0]["checks"][0]["message"]
    assert (open_project / ".evalrun/results/t1.json").stat().st_uid == 65534  # files stay the user's own


@pytest.mark.parametrize(
    ("tiers", "says"),
    [
        ('[tiers.t3]\nnetwork = "loopback"\n', "tiers.t3.network: t3 is live and never isolated"),
        ("[tiers.t3]\nrequire_isolation = true\n", "tiers.t3.require_isolation: t3 is live and never isolated"),
        ('[tiers.t1]\nnetwork = "host"\nrequire_isolation = true\n', 'sets network = "host", which is never isolated'),
        ('[tiers.t1]\nnetwork = "none"\n', "tiers.t1.network: must be one of 'loopback' or 'host'"),
    ],
)
def test_contradictory_network_settings_are_one_line_exit_2(project, tiers: str, says: str) -> None:
    proj = project({"manifest.toml": tiers + "[tiers.t2]\n", "e/score.py": REACH_SCORER})
    r = proj.run("t1")
    assert r.code == 2, r.output
    assert says in r.err, r.err
