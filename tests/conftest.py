"""Shared fixtures: a project builder that runs the real ``evalrun`` entry point.

``project({"manifest.toml": ..., "evals/a/score.py": ...}).run("t1")`` writes
the files under a temporary folder and runs ``python -m evalrun`` there in a
process of its own, returning the exit code and the output (tox's
``tox_project`` fixture is the model). The process is forked from a warm one
that imported evalrun once per worker (``evals/lib/evalrun_forks.py``, which
sets each child up as ``python -m evalrun`` would be; tests/test_evalrun_forks.py
holds it to a fresh process's output): hundreds of runs would otherwise spend
most of the suite's CPU importing typer and pydantic. Tests of signals and
process start-up start evalrun themselves, fresh.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "evals" / "lib"))
from evalrun_forks import Zygote  # noqa: E402

# Every process this pytest process starts inherits this variable (unless a
# test gives it a made-up environment), so a leftover is found even after its
# parent died and it was re-parented to init. Not EVALRUN_*: Project.env drops those.
LEAK_TAG_VAR = "PYTEST_EVALRUN_LEAK_TAG"
LEAK_GRACE_S = 10.0  # a process on its way out gets this long to go (only paid by a leak)


# -- bytecode ------------------------------------------------------------------
#
# The suite starts ``python -m evalrun`` hundreds of times. Where the
# environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE, as container
# images often set), nothing compiles evalrun's modules once for all: each
# process would compile them from source again. Reading bytecode is still
# allowed, so the session compiles them once, before xdist starts its workers
# (``__pycache__/`` is gitignored; a no-op where the bytecode is up to date).


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and os.environ.get("PYTHONDONTWRITEBYTECODE"):
        import compileall

        compileall.compile_dir(REPO / "evalrun", quiet=2)


@dataclass
class RunOutcome:
    code: int
    out: str
    err: str

    @property
    def output(self) -> str:
        return self.out + self.err


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, files: dict[str, str | bytes]) -> "Project":
        for rel, content in files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(textwrap.dedent(content).lstrip("\n"), encoding="utf-8")
            if rel.endswith(".sh"):
                path.chmod(0o755)
        return self

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """This process's environment without the outer run's evalrun, CI and colour settings."""
        full_env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALRUN_", "GITHUB_"))}
        full_env.pop("CI", None)
        full_env.pop("NO_COLOR", None)
        full_env.update(extra or {})
        return full_env

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> RunOutcome:
        """``python -m evalrun ARGS`` here, as ``subprocess.run(..., capture_output=True, text=True, timeout=timeout)``."""
        with tempfile.TemporaryDirectory(prefix="evalrun-run-") as scratch:
            out, err = Path(scratch) / "stdout", Path(scratch) / "stderr"
            code = evalrun_zygote().run(args, self.root, self.env(env), out, err, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(["python", "-m", "evalrun", *args], timeout)
            return RunOutcome(code, _as_text(out), _as_text(err))

    def results(self, tier: str = "t1") -> dict[str, Any]:
        return json.loads((self.root / ".evalrun" / "results" / f"{tier}.json").read_text())

    def eval_result(self, name: str, tier: str = "t1") -> dict[str, Any]:
        return next(e for e in self.results(tier)["evals"] if e["name"] == name)


def _as_text(path: Path) -> str:
    """A captured stream decoded as ``text=True`` decodes it (the locale's encoding, newlines made ``\\n``)."""
    return io.TextIOWrapper(io.BytesIO(path.read_bytes())).read()


_ZYGOTE: list[Zygote] = []  # this worker's, started by its first Project.run, stopped when the session ends
_ZYGOTE_LOCK = threading.Lock()


def evalrun_zygote() -> Zygote:
    with _ZYGOTE_LOCK:
        if not _ZYGOTE:
            zygote = Zygote(dict(os.environ))
            SESSION_ROOTS.add(zygote.pid)  # its runs are waited for; what they leave behind is a leak
            _ZYGOTE.append(zygote)
        return _ZYGOTE[0]


@pytest.fixture
def project(tmp_path: Path):
    def make(files: dict[str, str | bytes] | None = None) -> Project:
        return Project(tmp_path).write(files or {})

    return make


# -- xdist groups -----------------------------------------------------------------
#
# ``--dist loadgroup`` keeps the tests of one ``xdist_group`` on one worker, one
# after another (one embedded PostgreSQL at a time; a module fixture made once):
# pytest-xdist 3.8 tells its scheduler the group by appending ``@<group>`` to
# each such test's node id. pytest 9.2 builds node ids anew and drops it
# (pytest-dev/pytest-xdist#1386), so the dev extra pins pytest below 9.2 until
# xdist handles it; should a grouped test still run without its group, it fails
# here rather than racing another worker for the same resources.


def _group_suffix(item: pytest.Item) -> str:
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "@" + "_".join(sorted(names)) if names else ""


# The quick subset (README, "Quick start"): ``python -m pytest -q -m "not slow"`` leaves out
# the tests that run evalrun end to end as processes of their own (``Project.run``, fresh
# starts, real servers and tools) and the Hypothesis property tests; what is left tests the
# modules in-process, in well under 30 s.
SLOW_FIXTURES = frozenset({"project", "suite", "postgres_url", "postgres_database", "history_env"})


def pytest_itemcollected(item: pytest.Item) -> None:
    names = set(getattr(item, "fixturenames", ()))
    module = getattr(getattr(item, "module", None), "__dict__", {})
    if names & SLOW_FIXTURES or "subprocess" in module or getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
        item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _xdist_group_holds(request: pytest.FixtureRequest) -> None:
    """A test marked ``xdist_group`` fails unless ``--dist loadgroup`` really keeps its group on one worker."""
    suffix = _group_suffix(request.node)
    if suffix and getattr(request.config.option, "loadgroup", False) and not request.node.nodeid.endswith(suffix):
        pytest.fail(f"--dist loadgroup did not keep this test in its group {suffix[1:]!r} on one worker "
                    "(pytest-dev/pytest-xdist#1386; see tests/conftest.py)", pytrace=False)


def json_scorer(checks: list[dict[str, Any]], metrics: dict[str, Any] | None = None, exit_code: int = 0) -> str:
    """A tiny Python scorer that writes the given report and exits."""
    report = {"checks": checks, "metrics": metrics or {}}
    return (
        "import json, os, sys\n"
        f"json.dump({report!r}, open(os.environ['EVALRUN_REPORT'], 'w'))\n"
        f"sys.exit({exit_code})\n"
    )


def eval_entry(name: str, run: str = '["python", "score.py"]', tier: str = "t1", extra: str = "") -> str:
    return f'[[evals]]\nname = "{name}"\ntier = "{tier}"\ndir = "evals/{name}"\nrun = {run}\n{extra}\n'


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory):
    """One embedded PostgreSQL cluster for the whole session, started and stopped by evalrun's own ServiceManager."""
    from evalrun.services.manager import ServiceManager
    from evalrun.services.spec import ServiceSpec

    def no_ready_check(requirement: str, env: Any) -> tuple[bool, str]:
        return False, "embedded postgres has its own readiness check"

    root = tmp_path_factory.mktemp("session-postgres")
    spec = ServiceSpec("db", None, "embedded", None, 90.0, {}, root)
    with ServiceManager({"db": spec}, root / "logs", root / "state", dict(os.environ), no_ready_check) as services:
        state = services.start("db")
        assert state.ok, state.failure
        SESSION_ROOTS.add(state.pid)  # shared by the session: no single test's leak
        yield services.env_for(["db"])["DATABASE_URL"]
    SESSION_ROOTS.discard(state.pid)


@pytest.fixture
def postgres_database(postgres_url: str) -> str:
    """A fresh, empty database in the session cluster for one test; its URL."""
    import uuid

    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return postgres_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture(params=["sqlite", "postgres"])
def history_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of a CLI run whose history is the default SQLite file, then a fresh embedded PostgreSQL."""
    if request.param == "sqlite":
        return {}
    return {"EVALRUN_HISTORY_URL": request.getfixturevalue("postgres_database")}


T = TypeVar("T")


def finishes(call: Callable[[], T], within: float = 60.0) -> T:
    """``call()``'s result, or a test failure if it has not returned within ``within`` s.

    Not a speed limit: the tests that use it make the wrong behaviour take an
    hour (a deadline, a grace or a poll interval of 3600 s), so the generous
    bound only turns that hang into a failure, on however loaded a machine.
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = call()
        except BaseException as exc:  # re-raised in the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    if thread.is_alive():
        pytest.fail(f"still running after {within:g} s: it waited for something it should not have", pytrace=False)
    if "error" in box:
        raise box["error"]
    return box["result"]


def wait_until(condition: Callable[[], T], within: float = 30.0, what: str = "the condition") -> T:
    """Poll ``condition`` until it is truthy; fail after a generous ``within`` s."""
    deadline = time.monotonic() + within
    while not (value := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not come true within {within:g} s", pytrace=False)
        time.sleep(0.02)
    return value


# -- a user with no home ---------------------------------------------------------
#
# A container's arbitrary uid has no $HOME and no passwd entry. A forked child
# of this process becomes such a user for real (setuid needs root) and runs a
# call in-process: evalrun's modules are already imported, so nothing the
# stranger cannot read is needed. Import what the call needs before forking.

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become a user with no passwd entry")
STRANGER = 54321  # no passwd entry on any machine these tests run on


def as_a_user_with_no_home(call: Callable[[], int]) -> tuple[int, str]:
    """``call()``'s return value as the exit code, and what it printed, run as uid STRANGER without $HOME."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(read)
            sys.stdout = sys.stderr = open(write, "w", encoding="utf-8")  # not pytest's capture
            os.setgroups([])
            os.setgid(STRANGER)
            os.setuid(STRANGER)
            os.environ.pop("HOME", None)
            code = call()
        except BaseException as exc:  # noqa: BLE001 - said, and a distinct exit code
            print(f"{type(exc).__name__}: {exc}")
            code = 98
        finally:
            sys.stdout.flush()
            os._exit(code)
    os.close(write)
    reaped: list[tuple[int, int]] = []
    try:
        reaped = wait_until(lambda: [w for w in [os.waitpid(pid, os.WNOHANG)] if w[0]], within=60, what="the child")
    finally:
        if not reaped:  # not reaped yet: it is still ours to kill
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode("utf-8", "replace")
    return os.waitstatus_to_exitcode(reaped[0][1]), said


# -- leaked processes ----------------------------------------------------------
#
# A test that ends with a process it started still running fails (an error in
# its teardown names the process and kills it); the session checks again at
# its end for anything started outside a test. Under pytest-xdist each worker
# checks its own processes.


def default_sigint() -> None:
    """``preexec_fn`` for a child that must obey Ctrl-C: run in the background
    (``nohup``, ``cmd &``) pytest inherits SIGINT ignored, and so would it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, start time) of every process in /proc."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:  # os.open, not Path.read_text: this runs twice per test
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
            try:
                raw = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2 :].split()
        table[int(name)] = (int(fields[1]), fields[0].decode(), fields[19].decode())
    return table


_TAGGED: dict[tuple[int, str], bool] = {}  # a process's environment is fixed when it starts


def _tagged(pid: int, started: str, tag: bytes) -> bool:
    key = (pid, started)
    if key not in _TAGGED:
        try:
            _TAGGED[key] = tag in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return False  # gone, or not ours to read
    return _TAGGED[key]


def live_descendants() -> set[tuple[int, str]]:
    """(pid, start time) of every live process this one started: its descendants
    and whatever carries its leak tag. Zombies have stopped and do not count."""
    me = os.getpid()
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    ours, todo = set(), [me]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in ours:
                ours.add(child)
                todo.append(child)
    tag = f"{LEAK_TAG_VAR}={os.environ.get(LEAK_TAG_VAR, '')}".encode()
    ours |= {pid for pid, (_, _, started) in table.items() if pid not in ours and pid != me and _tagged(pid, started, tag)}
    return {(pid, table[pid][2]) for pid in ours if table[pid][1] not in "ZX"}


# Processes a session-scoped fixture owns (a database shared by many tests), with
# all their descendants: started inside the first test that uses them, stopped
# when the session ends. (PostgreSQL's children leave the postmaster's group.)
SESSION_ROOTS: set[int] = set()


def _not_session_owned(found: set[tuple[int, str]]) -> set[tuple[int, str]]:
    if not SESSION_ROOTS:
        return found
    table = _process_table()

    def owned(pid: int) -> bool:
        seen = set()
        while pid in table and pid not in seen:
            if pid in SESSION_ROOTS:
                return True
            seen.add(pid)
            pid = table[pid][0]
        return False

    return {(pid, started) for pid, started in found if not owned(pid)}


def _leftovers(before: set[tuple[int, str]]) -> list[str]:
    """Processes started since ``before`` that do not go within the grace; they are killed."""
    deadline = time.monotonic() + LEAK_GRACE_S
    while (new := _not_session_owned(live_descendants() - before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    described = []
    for pid, _ in sorted(new):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            cmdline = "?"
        described.append(f"{pid}: {cmdline}")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return described


@pytest.fixture(scope="session", autouse=True)
def _no_process_outlives_the_session():
    os.environ[LEAK_TAG_VAR] = uuid.uuid4().hex
    before = live_descendants()
    yield
    for zygote in _ZYGOTE:
        zygote.close()
        SESSION_ROOTS.discard(zygote.pid)
    leaked = _leftovers(before)
    if leaked:
        pytest.fail("processes left running at the end of the session:\n" + "\n".join(leaked), pytrace=False)


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test(_no_process_outlives_the_session):
    before = live_descendants()
    yield
    leaked = _leftovers(before)
    if leaked:
        pytest.fail("the test left processes running:\n" + "\n".join(leaked), pytrace=False)
