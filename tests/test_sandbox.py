"""The isolation fallback (evalrun.sandbox): a restricted thread of evalrun's own starts the scorers.

Real processes, started the way evalrun starts scorers (``process.spawn``), try
real sockets against the test's own listeners on the host's 127.0.0.1 (TCP,
UDP, an abstract and a path unix socket). The seccomp filter and Landlock
domain apply to the restricted thread and what it starts, never to the test
process itself: after each test it still reaches its own listeners.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalrun.process import spawn
from evalrun.sandbox import Rules, Sandbox, landlock_abi, mechanism, seccomp_program
from evalrun.services.manager import _port_of

LINUX = sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")
needs_fallback = pytest.mark.skipif(not LINUX or landlock_abi() < 6,
                                    reason="the fallback needs Linux on x86_64/aarch64 with Landlock ABI 6")


@pytest.fixture
def listeners() -> Iterator[dict[str, object]]:
    """Two TCP listeners, a UDP socket, an abstract and a path unix socket, all the test's own, all answering."""
    tcp = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.05)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract_name = f"\0evalrun-sandbox-test-{os.getpid()}"
    abstract.bind(abstract_name)
    abstract.listen()
    folder = Path(os.environ.get("TMPDIR", "/tmp"))
    path = folder / f"evalrun-sandbox-test-{os.getpid()}.sock"
    path.unlink(missing_ok=True)
    on_path = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    on_path.bind(str(path))
    on_path.listen()
    stop = threading.Event()
    servers = [*tcp, abstract, on_path]
    for server in servers:
        server.settimeout(0.1)

    def serve(server: socket.socket) -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"host\n")

    threads = [threading.Thread(target=serve, args=(s,), daemon=True) for s in servers]
    for t in threads:
        t.start()
    try:
        yield {"allowed": tcp[0].getsockname()[1], "other": tcp[1].getsockname()[1], "udp_socket": udp,
               "udp": udp.getsockname()[1], "abstract": abstract_name[1:], "path": str(path)}
    finally:
        stop.set()
        for t in threads:
            t.join(5)
        for s in (*servers, udp):
            s.close()
        path.unlink(missing_ok=True)


TRY = r"""
import ctypes, json, os, socket, sys
ports = json.loads(sys.argv[1])

def attempt(fn):
    try:
        return fn()
    except OSError as exc:
        return f"errno {exc.errno}"

def tcp(port, flags=0, proto=0):
    def go():
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM | flags, proto) as s:
            s.setblocking(True)
            s.settimeout(5)
            s.connect(("127.0.0.1", port))
            return s.recv(16).decode().strip()
    return attempt(go)

def udp(port):
    def go():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"scorer", ("127.0.0.1", port))
            return "sent"
    return attempt(go)

def unix(address):
    def go():
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(address)
            return s.recv(16).decode().strip()
    return attempt(go)

def pair():
    a, b = socket.socketpair()
    a.sendall(b"x")
    got = b.recv(1).decode()
    a.close(); b.close()
    return got

def io_uring():
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 1, params)
    if fd >= 0:
        os.close(fd)
        return "made"
    return f"errno {ctypes.get_errno()}"

print(json.dumps({
    "allowed": tcp(ports["allowed"]),
    "allowed nonblocking": tcp(ports["allowed"], socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC),
    "allowed tcp proto": tcp(ports["allowed"], 0, socket.IPPROTO_TCP),
    "sctp": tcp(ports["allowed"], 0, 132),
    "other": tcp(ports["other"]),
    "udp": udp(ports["udp"]),
    "abstract": unix("\0" + ports["abstract"]),
    "path": unix(ports["path"]),
    "socketpair": attempt(pair),
    "io_uring": io_uring(),
}))
"""


def _tried(sandbox: Sandbox | None, listeners: dict[str, object]) -> dict[str, str]:
    ports = {k: v for k, v in listeners.items() if k != "udp_socket"}
    proc = spawn([sys.executable, "-c", TRY, json.dumps(ports)], Path.cwd(), os.environ, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, sandbox=sandbox)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


def _udp_received(listeners: dict[str, object]) -> list[bytes]:
    sock = listeners["udp_socket"]
    assert isinstance(sock, socket.socket)
    got = []
    try:
        while True:
            got.append(sock.recv(64))
    except OSError:
        return got


@needs_fallback
def test_t1_a_scorer_opens_no_ip_socket_but_unix_sockets_and_pairs_work(listeners) -> None:
    sandbox, why = Sandbox.open(Rules("t1"))
    assert sandbox is not None, why
    try:
        tried = _tried(sandbox, listeners)
    finally:
        sandbox.close()
    denied = "errno 13"  # EACCES, at socket()
    assert {k: tried[k] for k in ("allowed", "allowed nonblocking", "allowed tcp proto", "sctp", "other", "udp")} == \
        dict.fromkeys(("allowed", "allowed nonblocking", "allowed tcp proto", "sctp", "other", "udp"), denied)
    assert _udp_received(listeners) == []
    assert tried["abstract"] == "errno 1"  # EPERM: Landlock's scope, an abstract socket made outside
    assert tried["path"] == "host"  # a socket on a path is NOT isolated: the header and docs say so
    assert tried["socketpair"] == "x"  # what asyncio, multiprocessing and libuv's stdio use
    assert tried["io_uring"] == "errno 38"  # ENOSYS: an io_uring could make sockets seccomp never sees
    # evalrun's own threads are not restricted
    with socket.create_connection(("127.0.0.1", listeners["allowed"]), timeout=5) as s:  # type: ignore[arg-type]
        assert s.recv(16) == b"host\n"


@needs_fallback
def test_t2_a_scorer_connects_over_tcp_to_the_ports_given_and_nothing_else(listeners) -> None:
    sandbox, why = Sandbox.open(Rules("t2", (listeners["allowed"],)))  # type: ignore[arg-type]
    assert sandbox is not None, why
    try:
        tried = _tried(sandbox, listeners)
    finally:
        sandbox.close()
    assert tried["allowed"] == tried["allowed nonblocking"] == tried["allowed tcp proto"] == "host"
    assert tried["other"] == "errno 13"  # EACCES from Landlock at connect()
    assert tried["udp"] == tried["sctp"] == "errno 13"  # EACCES from seccomp at socket(): TCP only
    assert _udp_received(listeners) == []
    assert tried["abstract"] == "errno 1" and tried["path"] == "host"
    assert tried["io_uring"] == "errno 38"


@needs_fallback
def test_without_a_sandbox_everything_is_reached(listeners) -> None:
    """The same scorer unrestricted reaches every listener: the denials above are the sandbox's doing."""
    tried = _tried(None, listeners)
    assert tried["allowed"] == tried["other"] == tried["abstract"] == tried["path"] == "host"
    assert tried["udp"] == "sent" and _udp_received(listeners) == [b"scorer"]


@needs_fallback
def test_a_start_that_fails_raises_in_the_caller_and_the_thread_serves_on(tmp_path: Path) -> None:
    sandbox, why = Sandbox.open(Rules("t1"))
    assert sandbox is not None, why
    try:
        with pytest.raises(FileNotFoundError):
            spawn([str(tmp_path / "missing")], tmp_path, os.environ, sandbox=sandbox)
        proc = spawn([sys.executable, "-c", "print('ok')"], tmp_path, os.environ, stdout=subprocess.PIPE, sandbox=sandbox)
        assert proc.communicate(timeout=60)[0] == b"ok\n"
    finally:
        sandbox.close()
    assert not sandbox._thread.is_alive()
    # a worker that outlived the run (an interrupt): refused at once, never started unrestricted, never hung
    with pytest.raises(OSError, match="isolated scorer thread has ended"):
        spawn([sys.executable, "-c", "pass"], tmp_path, os.environ, sandbox=sandbox)
    sandbox.close()  # twice: nothing


def test_the_mechanism_is_named_or_refused_with_a_reason(monkeypatch) -> None:
    import evalrun.sandbox as sb

    monkeypatch.setattr(sb, "landlock_abi", lambda: 3)
    monkeypatch.setattr(sb.sys, "platform", "linux")
    monkeypatch.setattr(sb.platform, "machine", lambda: "x86_64")
    assert mechanism("t1") == ("seccomp", None)  # no Landlock scopes: seccomp alone keeps IP out
    name, why = mechanism("t2")
    assert name is None and "Landlock network rules need Linux 6.7 or later (Landlock ABI 4" in why
    monkeypatch.setattr(sb, "landlock_abi", lambda: 6)
    assert mechanism("t1") == mechanism("t2") == ("seccomp+landlock", None)
    monkeypatch.setattr(sb.platform, "machine", lambda: "riscv64")
    assert mechanism("t1")[0] is None
    monkeypatch.setattr(sb.sys, "platform", "darwin")
    assert mechanism("t1") == (None, "seccomp and Landlock are Linux only")


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
@pytest.mark.parametrize("rules", [Rules("t1"), Rules("t2", (1, 2))])
def test_every_path_of_the_filter_ends_in_a_return(machine: str, rules: Rules) -> None:
    """The program as the kernel's checker sees it: no jump out of it, and the last instruction returns.
    (x86_64 runs it for real above; aarch64's differs in numbers only.)"""
    prog = seccomp_program(rules, machine)
    assert 0 < len(prog) <= 4096
    for at, (code, jt, jf, _k) in enumerate(prog):
        if code & 0x07 == 0x05:  # a jump
            assert at + 1 + max(jt, jf) < len(prog), (at, prog[at])
    assert prog[-1][0] == 0x06
    assert prog[1][3] == {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}[machine]


@given(st.sampled_from(["127.0.0.1", "localhost", "db.internal", "[::1]"]), st.integers(1, 65535))
def test_a_ready_requirement_names_the_port_the_fallback_allows(host: str, port: int) -> None:
    assert _port_of(f"tcp:{host}:{port}") == (port,)
    assert _port_of(f"http://{host}:{port}/health") == (port,)
    assert _port_of(f"http:{host}:{port}/health") == (port,)


@given(st.sampled_from(["", "tcp:", "tcp:127.0.0.1:", "http://", "http:", "https://h:", "db"]), st.text(max_size=40))
def test_any_ready_requirement_gives_a_port_or_none_and_never_raises(prefix: str, text: str) -> None:
    ports = _port_of(prefix + text)
    assert all(0 < p <= 65535 for p in ports) and len(ports) <= 1


def test_a_port_out_of_range_is_no_port() -> None:
    assert _port_of("tcp:127.0.0.1:99999") == _port_of("tcp:127.0.0.1:0") == _port_of("http://h:99999/") == ()
    assert _port_of("https://h/health") == (443,) and _port_of("ready-probe") == ()


def test_a_refused_connection_is_explained_by_the_mechanism_that_refused_it() -> None:
    from evalrun.run.isolation import explain_connections
    from evalrun.reports_out.describe import describe_connection_hint
    from evalrun.results import CheckResult, EvalResult, Status

    def failing(message: str, tier: str = "t2") -> EvalResult:
        return EvalResult(name="e", tier=tier, dir="e", status=Status.FAILED,
                          checks=[CheckResult(name="c", assertions=1, passed=False, message=message)])

    def explained(result: EvalResult, mechanism: str) -> EvalResult:
        def hint(r: EvalResult) -> str | None:  # an eval with model = true: only how its tier is isolated is said
            return describe_connection_hint(r.tier, r.name, uses_model=True, recorder=None, mechanism=mechanism,
                                            no_model_at="127.0.0.1:4")
        [out] = explain_connections([result], hint, refused=mechanism != "namespace")  # as evalrun.run.pipeline does
        return out

    t2 = explained(failing("[Errno 13] Permission denied"), "seccomp+landlock")
    assert t2.message == ("t2 is isolated (seccomp+landlock): a t2 scorer connects over TCP only to the replay proxy "
                          "and the run's own services; if the eval must reach a service on the host or the network, "
                          "set network = \"host\" in [tiers.t2] or move it to t3")
    t1 = explained(failing("connect EACCES 127.0.0.1:80", "t1"), "seccomp")
    assert t1.message.startswith("t1 is isolated (seccomp): a t1 scorer can open no IP socket;")
    # in the namespace a refusal is not the network's: "permission denied" means a file there
    ns = explained(failing("[Errno 13] Permission denied: 'out.txt'"), "namespace")
    assert ns.message is None
