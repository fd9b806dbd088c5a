"""The suite's pytest plugin: fixtures and hooks every test gets (tests/conftest.py loads it).

``tests/conftest.py`` names it in ``pytest_plugins`` (tox's ``tox.pytest`` is
the model); the helpers tests import live beside it in the ``harness``
package, importable through pyproject.toml's ``pythonpath``. Here:

- ``project``: a :class:`harness.project.Project` under ``tmp_path``;
- the PostgreSQL fixtures (one embedded cluster per session, a fresh database
  per test) and ``history_env`` (each history test once on SQLite, once on it);
- the leak gate: a test, or the session, that leaves a process running fails;
  so does a test that leaves SIGINT's or SIGTERM's handler changed (the next
  test in that process would inherit it: an ignored SIGINT makes Ctrl-C vanish);
- the ``slow`` marker the quick subset leaves out, and the check that
  ``--dist loadgroup`` really keeps an ``xdist_group`` on one worker;
- bytecode compiled once where the environment forbids writing it.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

import harness.git
import harness.history_runs
from harness.leaks import LEAK_TAG_VAR, SESSION_ROOTS, leftovers, live_descendants
from harness.paths import REPO, TESTS
from harness.project import Project, close_zygote


# -- bytecode ------------------------------------------------------------------
#
# The suite starts ``python -m evalrun`` hundreds of times. Where the
# environment forbids writing bytecode (PYTHONDONTWRITEBYTECODE, as container
# images often set), nothing compiles evalrun's modules once for all: each
# process would compile them from source again. Reading bytecode is still
# allowed, so the session compiles them once, before xdist starts its workers
# (``__pycache__/`` is gitignored; a no-op where the bytecode is up to date).
# Likewise pytest would rewrite the assertions of every test module again in
# every session and every worker: while it collects, it may keep the rewritten
# modules in their ``__pycache__/`` (its own file names, written atomically).
# The tests themselves run with the environment's setting.


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    if not hasattr(config, "workerinput"):  # xdist's documented attribute: set in a worker only
        import compileall

        compileall.compile_dir(REPO / "evalrun", quiet=2)
    sys.dont_write_bytecode = False


def pytest_collection_finish(session: pytest.Session) -> None:
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        sys.dont_write_bytecode = True


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
CLI_TESTS = TESTS / "cli"  # the end-to-end tests: every one is slow
SLOW_FIXTURES = frozenset({"project", "suite", "postgres_url", "postgres_database", "history_env"})


# The harness's own helpers that start programs (git): a module that imports one starts processes.
_PROCESS_HELPERS = (harness.git.git, harness.history_runs.git, harness.history_runs.commit_state,
                    harness.history_runs.three_runs)


def _starts_processes(module: dict[str, Any]) -> bool:
    """Whether a test module starts programs: it imports subprocess, or a harness helper that does (git)."""
    return "subprocess" in module or any(value is helper for value in module.values() for helper in _PROCESS_HELPERS)


def _end_to_end(item: pytest.Item) -> bool:
    """A test in ``tests/cli/``: the end-to-end tests, whatever fixture starts their processes."""
    return CLI_TESTS in Path(str(item.path)).parents


def pytest_itemcollected(item: pytest.Item) -> None:
    names = set(getattr(item, "fixturenames", ()))
    module = getattr(getattr(item, "module", None), "__dict__", {})
    if (names & SLOW_FIXTURES or _end_to_end(item) or _starts_processes(module)
            or getattr(getattr(item, "obj", None), "is_hypothesis_test", False)):
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's hook, in the controller: tell each worker whether the run distributes by group.

    A worker's own ``--dist`` reads ``no``; ``workerinput`` is xdist's documented
    way to hand a worker what the controller knows.
    """
    node.workerinput["evalrun_loadgroup"] = node.config.getoption("dist") == "loadgroup"


@pytest.fixture(autouse=True)
def _xdist_group_holds(request: pytest.FixtureRequest) -> None:
    """A test marked ``xdist_group`` fails unless ``--dist loadgroup`` really keeps its group on one worker."""
    suffix = _group_suffix(request.node)
    grouped = getattr(request.config, "workerinput", {}).get("evalrun_loadgroup", False)
    if suffix and grouped and not request.node.nodeid.endswith(suffix):
        pytest.fail(f"--dist loadgroup did not keep this test in its group {suffix[1:]!r} on one worker "
                    "(pytest-dev/pytest-xdist#1386; see tests/harness/plugin.py)", pytrace=False)


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory):
    """One embedded PostgreSQL cluster for the whole session, started and stopped by evalrun's own ServiceManager."""
    from evalrun.secrets import known_secrets
    from evalrun.services.manager import ServiceManager
    from evalrun.services.spec import ServiceSpec

    def no_ready_check(requirement: str, env: Any) -> tuple[bool, str]:
        return False, "embedded postgres has its own readiness check"

    root = tmp_path_factory.mktemp("session-postgres")
    spec = ServiceSpec("db", None, "embedded", None, 90.0, {}, root)
    with ServiceManager({"db": spec}, root / "logs", root / "state", dict(os.environ), no_ready_check,
                        secrets=known_secrets(os.environ).values) as services:
        state = services.start("db")
        assert state.ok, state.failure
        SESSION_ROOTS.add(state.pid)  # shared by the session: no single test's leak
        yield services.env_for(["db"])["DATABASE_URL"]
    SESSION_ROOTS.discard(state.pid)


@pytest.fixture
def postgres_database(postgres_url: str) -> str:
    """A fresh, empty database in the session cluster for one test; its URL."""
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



# -- leaked processes (harness.leaks) -------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _no_process_outlives_the_session():
    os.environ[LEAK_TAG_VAR] = uuid.uuid4().hex
    before = live_descendants()
    yield
    close_zygote()
    leaked = leftovers(before)
    if leaked:
        pytest.fail("processes left running at the end of the session:\n" + "\n".join(leaked), pytrace=False)


@pytest.fixture(autouse=True)
def _no_signal_handler_outlives_its_test():
    """SIGINT and SIGTERM are handled after a test as they were before it; a test that changed one fails (and the
    handler is put back, so the tests after it run as they would have)."""
    import signal

    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    yield
    changed = [(signum, handler) for signum, handler in before.items() if signal.getsignal(signum) != handler]
    for signum, handler in changed:
        signal.signal(signum, handler)
    if changed:
        pytest.fail("the test left signal handlers changed: " + ", ".join(
            f"{signal.Signals(signum).name} was {handler!r}" for signum, handler in changed), pytrace=False)


@pytest.fixture(autouse=True)
def _no_process_outlives_its_test(_no_process_outlives_the_session):
    before = live_descendants()
    yield
    leaked = leftovers(before)
    if leaked:
        pytest.fail("the test left processes running:\n" + "\n".join(leaked), pytrace=False)
