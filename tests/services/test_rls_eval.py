"""The rls-isolation eval: passes on schema.sql, and bites on schemas that leak.

One embedded PostgreSQL (the manifest's ``[services.db]``, started through the
real ServiceManager) serves the whole module; the scorer runs as a real
subprocess with ``DATABASE_URL`` and ``EVALRUN_REPORT`` set, against
``schema.sql``, ``leaky_schema.sql`` and copies of ``schema.sql`` broken one
way each under ``tmp_path`` (``RLS_SCHEMA`` takes an absolute path).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from evalrun.manifest import load_manifest
from evalrun.services.manager import ServiceManager
from evalrun.services.spec import ServiceSpec
from evalrun.secrets import known_secrets

from harness import REPO

# The module shares one embedded PostgreSQL: keep its tests on one xdist worker
# (one cluster, not one per worker), one cluster at a time with the others.
pytestmark = pytest.mark.xdist_group("postgres")

EVAL_DIR = REPO / "evals" / "rls-isolation"
SCHEMA = (EVAL_DIR / "schema.sql").read_text(encoding="utf-8")

CHECKS = [
    "the schema applies and takes the seed rows",
    "row-level security is enabled and forced",
    "policies cover every command with a WITH CHECK",
    "tenant A sees exactly its own rows",
    "tenant B sees exactly its own rows",
    "without a known tenant nothing is visible",
    "the table owner is bound by the policies",
    "a forged insert into another tenant is refused",
    "moving a row to another tenant is refused",
    "another tenant's rows cannot be updated or deleted",
]
CATALOG = CHECKS[:3]


def _no_ready_check(requirement: str, env: Mapping[str, str]) -> tuple[bool, str]:
    return False, f"no probe for {requirement} in this test"  # embedded postgres has its own readiness check


@pytest.fixture(scope="module")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("rls-services")
    spec = ServiceSpec("db", None, "embedded", None, 60.0, {}, root)
    with ServiceManager({"db": spec}, root / "logs", root / "state", dict(os.environ), _no_ready_check,
                        secrets=known_secrets(os.environ).values) as services:
        state = services.start("db")
        assert state.ok, state.failure
        yield services.env_for(["db"])["DATABASE_URL"]


def run_scorer(tmp_path: Path, env: Mapping[str, str]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run score.py as evalrun would; the report is {} when none was written."""
    report = tmp_path / "report.json"
    ours = ("RLS_SCHEMA", "DATABASE_URL")
    full = {k: v for k, v in os.environ.items() if not k.startswith("EVALRUN_") and k not in ours}
    full.update(EVALRUN_REPORT=str(report), EVALRUN_EVAL="rls-isolation", EVALRUN_TIER="t2", **env)
    proc = subprocess.run([sys.executable, "score.py"], cwd=EVAL_DIR, env=full, capture_output=True, text=True,
                          timeout=60)
    return proc, (json.loads(report.read_text()) if report.exists() else {})


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in report["checks"]}


def mutate(tmp_path: Path, old: str, new: str) -> str:
    assert old in SCHEMA, f"schema.sql no longer contains {old!r}; update this mutation"
    path = tmp_path / "mutated.sql"
    path.write_text(SCHEMA.replace(old, new), encoding="utf-8")
    return str(path)


def scratch_databases(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'rls_isolation_%'").fetchall()
    return [name for (name,) in rows]


# ---------------------------------------------------------------- the subject passes


def test_schema_sql_passes_every_check_and_drops_its_database(database_url: str, tmp_path: Path) -> None:
    proc, report = run_scorer(tmp_path, {"DATABASE_URL": database_url})
    assert proc.returncode == 0, proc.stderr
    checks = by_name(report)
    assert list(checks) == CHECKS
    failed = {name: c.get("message") for name, c in checks.items() if not c["passed"]}
    assert failed == {}
    assert all(c["assertions"] >= 3 for c in checks.values()), {n: c["assertions"] for n, c in checks.items()}
    assert report["metrics"]["schema"] == "schema.sql"
    assert scratch_databases(database_url) == []


def test_a_rerun_is_independent_of_the_first(database_url: str, tmp_path: Path) -> None:
    (tmp_path / "first").mkdir()
    _, first = run_scorer(tmp_path / "first", {"DATABASE_URL": database_url})
    _, second = run_scorer(tmp_path, {"DATABASE_URL": database_url})
    assert [c["name"] for c in first["checks"]] == CHECKS
    assert all(c["passed"] for c in first["checks"] + second["checks"])
    assert first["checks"] == second["checks"]  # same rows, same ids: nothing carried over


# ---------------------------------------------------------------- the eval bites


def test_leaky_schema_passes_review_but_fails_the_eval(database_url: str, tmp_path: Path) -> None:
    proc, report = run_scorer(tmp_path, {"DATABASE_URL": database_url, "RLS_SCHEMA": "leaky_schema.sql"})
    assert proc.returncode == 0, proc.stderr  # the scorer ran to completion; the report carries the verdict
    checks = by_name(report)
    assert list(checks) == CHECKS
    assert all(checks[name]["passed"] for name in CATALOG)  # it looks right in the catalog
    assert checks["tenant A sees exactly its own rows"]["passed"]
    forged = checks["a forged insert into another tenant is refused"]
    assert not forged["passed"]
    assert forged["message"] == (
        "tenant A inserting a row with tenant_id 2 (tenant B's) was not refused: "
        "expected 'refused by row-level security', got 'done, 1 row'"
    )
    assert "in table: [(" in forged["evidence"] and "2, 'tenant_a')]" in forged["evidence"]
    moved = checks["moving a row to another tenant is refused"]
    assert not moved["passed"]
    assert moved["message"].startswith("tenant A moving its row ")
    assert moved["message"].endswith(
        "(tenant B's) was not refused: expected 'refused by row-level security', got 'done, 1 row'"
    )
    assert not checks["without a known tenant nothing is visible"]["passed"]
    assert report["metrics"]["schema"] == "leaky_schema.sql"
    assert scratch_databases(database_url) == []


MUTATIONS = [
    pytest.param(
        "ALTER TABLE documents FORCE ROW LEVEL SECURITY;\n", "",
        {"row-level security is enabled and forced": "pg_class.relforcerowsecurity is false: the owner docs_owner "
                                                     "bypasses every policy",
         "the table owner is bound by the policies":
             "owner docs_owner with app.tenant=1 should see only tenant A's rows"},
        id="force-missing",
    ),
    pytest.param(
        "ALTER TABLE documents OWNER TO docs_owner;\n", "",
        {"row-level security is enabled and forced": "table owner postgres is a superuser or has BYPASSRLS"},
        id="owned-by-superuser",
    ),
    pytest.param(
        "FOR SELECT\n    USING (tenant_id = current_setting('app.tenant')::int);", "FOR SELECT USING (true);",
        {"tenant A sees exactly its own rows": "tenant A saw rows of another tenant",
         "tenant B sees exactly its own rows": "tenant B saw rows of another tenant",
         "without a known tenant nothing is visible": "tenant A with app.tenant not set in the transaction saw rows"},
        id="select-using-true",
    ),
    pytest.param(
        "FOR DELETE\n    USING (tenant_id = current_setting('app.tenant')::int);", "FOR DELETE USING (true);",
        {"another tenant's rows cannot be updated or deleted": "tenant A deleting without a WHERE clause: "
                                                               "expected 'done, 3 rows', got 'done, 5 rows'"},
        id="delete-using-true",
    ),
    pytest.param(
        "FOR UPDATE\n    USING (tenant_id = current_setting('app.tenant')::int)\n"
        "    WITH CHECK (tenant_id = current_setting('app.tenant')::int);",
        "FOR UPDATE USING (true) WITH CHECK (true);",
        {"another tenant's rows cannot be updated or deleted": "tenant A updating without a WHERE clause: "
                                                               "expected 'done, 3 rows', got 'done, 5 rows'"},
        id="update-using-true",
    ),
    pytest.param(
        "CREATE POLICY documents_insert ON documents FOR INSERT\n"
        "    WITH CHECK (tenant_id = current_setting('app.tenant')::int);", "",
        {"policies cover every command with a WITH CHECK": "no permissive policy covers INSERT for tenant_a, tenant_b",
         "a forged insert into another tenant is refused":
             "tenant A inserting into its own tenant: expected 'done, 1 row', got 'refused by row-level security'"},
        id="insert-policy-missing",
    ),
    pytest.param(
        "\n    WITH CHECK (tenant_id = current_setting('app.tenant')::int);\n\nCREATE POLICY documents_delete",
        ";\n\nCREATE POLICY documents_delete",
        {"policies cover every command with a WITH CHECK":
             "policies that write without a WITH CHECK: expected [], got ['documents_update']"},
        id="update-without-with-check",
    ),
    pytest.param(
        "    owner     text", "    author    text",
        {"the schema applies and takes the seed rows":
             'seeding documents as the superuser failed: column "owner" of relation "documents" does not exist'},
        id="seed-does-not-fit",
    ),
    pytest.param(
        "CREATE TABLE documents (", "CREATE TABEL documents (",
        {"the schema applies and takes the seed rows": "mutated.sql did not apply: expected None, got",
         "tenant A sees exactly its own rows": "not run: the schema did not apply"},
        id="sql-does-not-apply",
    ),
]


@pytest.mark.parametrize(("old", "new", "failures"), MUTATIONS)
def test_each_way_a_schema_leaks_fails_its_own_check(
    database_url: str, tmp_path: Path, old: str, new: str, failures: dict[str, str]
) -> None:
    proc, report = run_scorer(tmp_path, {"DATABASE_URL": database_url, "RLS_SCHEMA": mutate(tmp_path, old, new)})
    assert proc.returncode == 0, proc.stderr
    checks = by_name(report)
    assert list(checks) == CHECKS  # a check that cannot run still appears, failed
    for name, message in failures.items():
        assert not checks[name]["passed"], name
        assert message in checks[name]["message"], (name, checks[name]["message"])


def test_a_sql_error_names_the_file_and_line(database_url: str, tmp_path: Path) -> None:
    line = SCHEMA.splitlines().index("CREATE TABLE documents (") + 1
    broken = mutate(tmp_path, "CREATE TABLE documents (", "CREATE TABEL documents (")
    _, report = run_scorer(tmp_path, {"DATABASE_URL": database_url, "RLS_SCHEMA": broken})
    message = by_name(report)["the schema applies and takes the seed rows"]["message"]
    assert f"got '{tmp_path / 'mutated.sql'} line {line}: syntax error at or near \"TABEL\"'" in message
    assert [c["passed"] for c in report["checks"]] == [False] * len(CHECKS)


def test_a_role_left_with_bypassrls_fails_once_and_is_reset_by_the_next_run(database_url: str, tmp_path: Path) -> None:
    broken = mutate(tmp_path, "GRANT SELECT", "ALTER ROLE tenant_a BYPASSRLS;\nGRANT SELECT")
    _, report = run_scorer(tmp_path, {"DATABASE_URL": database_url, "RLS_SCHEMA": broken})
    checks = by_name(report)
    assert "tenant roles that are superusers or have BYPASSRLS: expected [], got ['tenant_a']" in \
        checks["row-level security is enabled and forced"]["message"]
    assert "tenant A saw rows of another tenant" in checks["tenant A sees exactly its own rows"]["message"]
    (tmp_path / "again").mkdir()
    _, again = run_scorer(tmp_path / "again", {"DATABASE_URL": database_url})
    assert [c["passed"] for c in again["checks"]] == [True] * len(CHECKS)  # schema.sql sets NOBYPASSRLS on every run


# ---------------------------------------------------------------- setup errors are one line


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SETUP_ERRORS = [
    pytest.param({}, "rls-isolation: DATABASE_URL is not set; run under `evalrun t2`", id="no-url"),
    pytest.param({"DATABASE_URL": "postgresql://postgres:s3cret-pw@127.0.0.1:{port}/postgres"},
                 "rls-isolation: DATABASE_URL (127.0.0.1:{port}/postgres): cannot connect: ", id="unreachable"),
    pytest.param({"DATABASE_URL": "{url}", "RLS_SCHEMA": "no-such.sql"},
                 "rls-isolation: RLS_SCHEMA=no-such.sql: no such file in ", id="missing-sql"),
]


@pytest.mark.parametrize(("env", "expected"), SETUP_ERRORS)
def test_setup_problems_are_one_line_and_exit_2(
    database_url: str, tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    port = str(_free_port())
    env = {k: v.replace("{port}", port).replace("{url}", database_url) for k, v in env.items()}
    proc, report = run_scorer(tmp_path, env)
    assert proc.returncode == 2
    assert proc.stderr.startswith(expected.replace("{port}", port)), proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "RuntimeDirWarning" not in ln and "user_runtime_dir" not in ln]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "s3cret-pw" not in proc.stderr + proc.stdout
    assert report == {}


# ---------------------------------------------------------------- the manifest


def test_the_manifest_runs_it_in_t2_with_the_embedded_db() -> None:
    manifest = load_manifest(REPO / "manifest.toml")
    (spec,) = [e for e in manifest.evals if e.name == "rls-isolation"]
    assert (spec.tier, spec.run, spec.services, spec.timeout) == ("t2", ["python", "score.py"], ["db"], 120)
    assert manifest.services["db"].postgres == "embedded"
