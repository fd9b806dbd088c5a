"""rls-isolation: row-level security keeps two tenants apart, in the catalog and in practice.

This scorer owns the repository's real t2 eval of a PostgreSQL row-level
security (RLS) policy. The subject under test is a SQL file in this folder:
``schema.sql`` by default, or the file named by ``RLS_SCHEMA`` (relative to
this folder), e.g. ``leaky_schema.sql``, a schema that passes review but
leaks and on which this eval must fail.

It connects with psycopg to ``DATABASE_URL`` (exported by the manifest's
``[services.db]``, an embedded throwaway cluster) as a superuser, creates a
fresh database for the run (dropped at the end, so re-runs are independent),
applies the SQL, seeds three rows for tenant A and two for tenant B, and then:

- reads the catalog: RLS enabled *and* forced on ``documents``, no role
  involved that bypasses RLS, a permissive policy for every command, a WITH
  CHECK on every policy that writes;
- acts as each tenant (``SET LOCAL ROLE tenant_a`` plus ``app.tenant``,
  inside a transaction that is always rolled back, so checks cannot disturb
  each other) and asserts what it sees and what it may write.

The schema's contract: roles ``tenant_a`` (tenant id 1) and ``tenant_b``
(id 2), table ``documents(id, tenant_id, owner, body)`` whose ``owner``
defaults to the writing role, policies keyed on ``current_setting('app.tenant')``.

A superuser always bypasses RLS, which is why every behavioural check first
drops to the tenant's role; the ground truth after a write is read back as the
superuser inside the same transaction, so a write that should have been
refused is seen even though it is never committed.

Setup problems (no ``DATABASE_URL``, no server, a missing SQL file, a role
without superuser) are one line on stderr and exit 2. A SQL file that does not
apply is a failed check naming the file and line, and the checks that need it
fail as "not run". Nothing here prints the URL: it may hold a password.
"""

from __future__ import annotations

import os
import secrets
import signal
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrun import scorer

if TYPE_CHECKING:
    import psycopg

HERE = Path(__file__).resolve().parent
SCHEMA_ENV = "RLS_SCHEMA"
DEFAULT_SCHEMA = "schema.sql"
TABLE = "documents"
COMMANDS = ("SELECT", "INSERT", "UPDATE", "DELETE")
TENANT_A, TENANT_B = "tenant_a", "tenant_b"
TENANT_ID = {TENANT_A: 1, TENANT_B: 2}
LABEL = {TENANT_A: "tenant A", TENANT_B: "tenant B"}
SEED = {
    TENANT_A: ("a: roadmap", "a: payroll", "a: supplier contract"),
    TENANT_B: ("b: pricing", "b: board minutes"),
}
FORGED = "forged by another tenant"
REFUSED = "refused by row-level security"
STATEMENT_TIMEOUT_MS = 10_000  # a policy that hangs fails its check instead of the whole eval's timeout
CONNECT_TIMEOUT_S = 10
NOT_RUN = "not run: the schema did not apply (see check 'the schema applies and takes the seed rows')"


class SetupError(Exception):
    """The eval cannot start; the message is the user's one line."""


@dataclass
class Outcome:
    """What one statement did: its rows and row count, or the error that refused it."""

    rows: list[tuple[Any, ...]] = field(default_factory=list)
    rowcount: int = 0
    error: Exception | None = None

    def describe(self) -> str:
        """``refused by row-level security``, ``done, 1 row`` or ``error Class: message``."""
        if self.error is None:
            return f"done, {self.rowcount} row{'' if self.rowcount == 1 else 's'}"
        import psycopg.errors

        text = _first_line(self.error)
        if isinstance(self.error, psycopg.errors.InsufficientPrivilege) and "row-level security" in text:
            return REFUSED
        return f"error {type(self.error).__name__}: {text}"


class Actor:
    """Statements run as one role with one ``app.tenant``, inside a transaction that is rolled back."""

    def __init__(self, conn: psycopg.Connection[Any], role: str) -> None:
        self._conn = conn
        self.role = role

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a query that must succeed."""
        return self._conn.execute(query, params).fetchall()

    def attempt(self, query: str, params: Sequence[Any] = ()) -> Outcome:
        """Run a statement that may be refused; a savepoint keeps the transaction usable after it."""
        import psycopg

        try:
            with self._conn.transaction():
                cur = self._conn.execute(query, params)
                return Outcome(cur.fetchall() if cur.description else [], cur.rowcount)
        except psycopg.Error as exc:
            return Outcome(error=exc)

    def truth(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows as the superuser sees them, uncommitted writes of this transaction included."""
        from psycopg import sql

        self._conn.execute("SET LOCAL ROLE NONE")
        try:
            return self._conn.execute(query, params).fetchall()
        finally:
            self._conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(self.role)))


@contextmanager
def acting_as(conn: psycopg.Connection[Any], role: str, tenant: int | str | None) -> Iterator[Actor]:
    """Act as ``role`` with ``app.tenant`` set to ``tenant`` (left unset for None); always roll back."""
    from psycopg import sql

    with conn.transaction(force_rollback=True):
        conn.execute(sql.SQL("SET LOCAL ROLE {}").format(sql.Identifier(role)))
        if tenant is not None:
            conn.execute("SELECT set_config('app.tenant', %s, true)", (str(tenant),))
        yield Actor(conn, role)


# ---------------------------------------------------------------- setup


def resolve_schema(environ: Mapping[str, str]) -> Path:
    """The SQL file under test: ``$RLS_SCHEMA`` relative to this folder, else ``schema.sql``."""
    value = environ.get(SCHEMA_ENV) or DEFAULT_SCHEMA
    path = HERE / value
    if not path.is_file():
        raise SetupError(
            f"{SCHEMA_ENV}={value}: no such file in {HERE}; point {SCHEMA_ENV} at a SQL file "
            f"or unset it to test {DEFAULT_SCHEMA}"
        )
    return path


def describe_target(url: str) -> str:
    """``host:port/dbname`` of a URL, never its password."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 -- any parse failure: say so without echoing the URL
        return "an unparsable URL"
    return f"{parts.get('host', 'localhost')}:{parts.get('port', 5432)}/{parts.get('dbname', '')}"


def connect(url: str, dbname: str | None = None) -> psycopg.Connection[Any]:
    """An autocommit connection, with a statement timeout so a hanging policy cannot stall the run."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    extra: dict[str, Any] = {"options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"}
    if dbname is not None:
        extra["dbname"] = dbname
    return psycopg.connect(make_conninfo(url, **extra), autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)


@contextmanager
def scratch_database(url: str) -> Iterator[psycopg.Connection[Any]]:
    """A fresh database for this run, dropped afterwards whatever happened."""
    import psycopg

    where = describe_target(url)
    try:
        admin = connect(url)
    except psycopg.Error as exc:
        raise SetupError(
            f"DATABASE_URL ({where}): cannot connect: {_first_line(exc)}; "
            "run under `evalrun t2` with services = [\"db\"] or export a reachable PostgreSQL URL"
        ) from None
    with admin:
        (is_super,) = admin.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
        if not is_super:
            raise SetupError(
                f"DATABASE_URL ({where}): the role is not a superuser; this eval creates roles and acts "
                "as each tenant, so give it a superuser URL (the embedded db service is one)"
            )
        name = f"rls_isolation_{os.getpid()}_{secrets.token_hex(4)}"
        try:
            admin.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as exc:
            raise SetupError(f"DATABASE_URL ({where}): cannot create a scratch database: {_first_line(exc)}") from None
        try:
            with connect(url, name) as conn:
                yield conn
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def apply_schema(conn: psycopg.Connection[Any], path: Path, text: str) -> str | None:
    """Run the SQL file as one script; None, or ``file line N: problem`` if it fails."""
    import psycopg

    try:
        with conn.transaction():
            conn.execute(text)
    except psycopg.Error as exc:
        where = _display(path)
        position = getattr(exc.diag, "statement_position", None)
        if position and str(position).isdigit():
            where += f" line {text.count(chr(10), 0, int(position) - 1) + 1}"
        return f"{where}: {exc.diag.message_primary or _first_line(exc)}"
    return None


def seed(conn: psycopg.Connection[Any]) -> dict[str, list[int]]:
    """Insert each tenant's rows as the superuser (which bypasses RLS); their ids by role."""
    ids: dict[str, list[int]] = {}
    for role, bodies in SEED.items():
        ids[role] = [
            conn.execute(
                f"INSERT INTO {TABLE} (tenant_id, owner, body) VALUES (%s, %s, %s) RETURNING id",
                (TENANT_ID[role], role, body),
            ).fetchone()[0]
            for body in bodies
        ]
    return ids


# ---------------------------------------------------------------- checks


def check_applies(conn: psycopg.Connection[Any], path: Path) -> dict[str, list[int]] | None:
    """The SQL applies, the table and roles exist, the seed rows go in; the seeded ids, or None."""
    import psycopg

    text = path.read_text(encoding="utf-8")
    with scorer.check("the schema applies and takes the seed rows") as c:
        started = time.monotonic()
        problem = apply_schema(conn, path, text)
        scorer.metric("schema_apply_ms", round((time.monotonic() - started) * 1000))
        c.is_none(problem, f"{_display(path)} did not apply")
        c.is_not_none(conn.execute(f"SELECT to_regclass('public.{TABLE}')").fetchone()[0], f"no table {TABLE}")
        roles = [r for (r,) in conn.execute("SELECT rolname FROM pg_roles WHERE rolname = ANY(%s)", (list(SEED),))]
        c.equal(sorted(roles), sorted(SEED), "tenant roles present")
        try:
            ids = seed(conn)
        except psycopg.Error as exc:
            c.fail(f"seeding {TABLE} as the superuser failed: {_first_line(exc)}")
        c.equal({r: len(v) for r, v in ids.items()}, {r: len(v) for r, v in SEED.items()}, "seeded rows")
        return ids
    return None


def check_rls_forced(conn: psycopg.Connection[Any]) -> None:
    with scorer.check("row-level security is enabled and forced") as c:
        enabled, forced, owner, owner_super, owner_bypass = conn.execute(
            "SELECT c.relrowsecurity, c.relforcerowsecurity, r.rolname, r.rolsuper, r.rolbypassrls "
            "FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner WHERE c.oid = %s::regclass",
            (f"public.{TABLE}",),
        ).fetchone()
        tenants = conn.execute(
            "SELECT rolname FROM pg_roles WHERE rolname = ANY(%s) AND (rolsuper OR rolbypassrls) ORDER BY 1",
            (list(SEED),),
        ).fetchall()
        c.evidence(f"{TABLE}: relrowsecurity={enabled} relforcerowsecurity={forced} owner={owner}")
        c.true(enabled, f"pg_class.relrowsecurity is false: run ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")
        c.true(forced, f"pg_class.relforcerowsecurity is false: the owner {owner} bypasses every policy; "
                       f"run ALTER TABLE {TABLE} FORCE ROW LEVEL SECURITY")
        c.false(owner_super or owner_bypass, f"table owner {owner} is a superuser or has BYPASSRLS: it skips every "
                                             "policy; make the owner a plain role")
        c.equal([r for (r,) in tenants], [], "tenant roles that are superusers or have BYPASSRLS")


def check_policies(conn: psycopg.Connection[Any]) -> None:
    with scorer.check("policies cover every command with a WITH CHECK") as c:
        policies = conn.execute(
            "SELECT policyname, permissive, roles::text[], cmd, qual, with_check FROM pg_policies "
            "WHERE schemaname = 'public' AND tablename = %s ORDER BY policyname",
            (TABLE,),
        ).fetchall()
        c.evidence("\n".join(f"{n} {p} {r} {cmd} USING {q} WITH CHECK {w}" for n, p, r, cmd, q, w in policies))
        c.greater(len(policies), 0, f"no policies on {TABLE}")
        for command in COMMANDS:
            # Several policies may share the tenants between them; together they must reach both.
            reached = {role for _n, permissive, roles, cmd, _q, _w in policies
                       if permissive == "PERMISSIVE" and cmd in (command, "ALL") for role in roles}
            c.true("public" in reached or set(SEED) <= reached,
                   f"no permissive policy covers {command} for {', '.join(SEED)}")
        unchecked = [n for n, _p, _r, cmd, _q, with_check in policies
                     if cmd in ("INSERT", "UPDATE", "ALL") and with_check is None]
        c.equal(unchecked, [], "policies that write without a WITH CHECK")


def check_isolated(conn: psycopg.Connection[Any], ids: dict[str, list[int]], role: str) -> None:
    other = TENANT_B if role == TENANT_A else TENANT_A
    me, them = LABEL[role], LABEL[other]
    with scorer.check(f"{me} sees exactly its own rows") as c, acting_as(conn, role, TENANT_ID[role]) as actor:
        visible = actor.rows(f"SELECT id, tenant_id, owner, body FROM {TABLE} ORDER BY id")
        c.evidence(f"{me} (app.tenant={TENANT_ID[role]}) sees: {visible!r}")
        c.equal([row for row in visible if row[1] != TENANT_ID[role]], [], f"{me} saw rows of another tenant")
        c.equal([row[0] for row in visible], ids[role], f"{me}'s visible row ids")
        c.equal(actor.rows(f"SELECT count(*) FROM {TABLE}")[0][0], len(SEED[role]), f"{me}'s count(*)")
        c.equal(actor.rows(f"SELECT id FROM {TABLE} WHERE id = ANY(%s)", (ids[other],)), [],
                f"{me} looking up {them}'s rows by id")
        c.equal(actor.rows(f"SELECT count(*) FROM {TABLE} WHERE tenant_id = %s", (TENANT_ID[other],))[0][0], 0,
                f"{me} counting {them}'s rows")


def check_no_tenant(conn: psycopg.Connection[Any]) -> None:
    # Failing closed may be an error (the setting is unset or not a number) or no rows; any row is a leak.
    with scorer.check("without a known tenant nothing is visible") as c:
        cases = ((None, "app.tenant not set in the transaction"), ("", "app.tenant empty"),
                 (3, "app.tenant=3 (no such tenant)"))
        for tenant, what in cases:
            with acting_as(conn, TENANT_A, tenant) as actor:
                seen = actor.attempt(f"SELECT id, tenant_id FROM {TABLE}")
            c.evidence(f"{what}: {seen.describe()} {seen.rows!r}")
            c.equal(seen.rows, [], f"tenant A with {what} saw rows")


def check_owner_bound(conn: psycopg.Connection[Any], ids: dict[str, list[int]]) -> None:
    with scorer.check("the table owner is bound by the policies") as c:
        (owner,) = conn.execute("SELECT relowner::regrole::text FROM pg_class WHERE oid = %s::regclass",
                                (f"public.{TABLE}",)).fetchone()
        for role in SEED:
            with acting_as(conn, owner, TENANT_ID[role]) as actor:
                visible = actor.attempt(f"SELECT id FROM {TABLE} ORDER BY id")
            c.evidence(f"owner {owner} with app.tenant={TENANT_ID[role]}: {visible.describe()} {visible.rows!r}")
            c.is_none(visible.error, f"owner {owner} reading as {LABEL[role]}")
            c.equal([i for (i,) in visible.rows], ids[role],
                    f"owner {owner} with app.tenant={TENANT_ID[role]} should see only {LABEL[role]}'s rows")


def check_forged_insert(conn: psycopg.Connection[Any]) -> None:
    with scorer.check("a forged insert into another tenant is refused") as c:
        for role, victim in ((TENANT_A, TENANT_B), (TENANT_B, TENANT_A)):
            me, them = LABEL[role], LABEL[victim]
            with acting_as(conn, role, TENANT_ID[role]) as actor:
                own = actor.attempt(f"INSERT INTO {TABLE} (tenant_id, body) VALUES (%s, 'own')", (TENANT_ID[role],))
                c.equal(own.describe(), "done, 1 row", f"{me} inserting into its own tenant")
                forged = actor.attempt(f"INSERT INTO {TABLE} (tenant_id, body) VALUES (%s, %s)",
                                       (TENANT_ID[victim], FORGED))
                planted = actor.truth(f"SELECT id, tenant_id, owner FROM {TABLE} WHERE body = %s", (FORGED,))
                c.evidence(f"{me} inserting tenant_id={TENANT_ID[victim]}: {forged.describe()}; in table: {planted!r}")
                c.equal(forged.describe(), REFUSED,
                        f"{me} inserting a row with tenant_id {TENANT_ID[victim]} ({them}'s) was not refused")
                c.equal(planted, [], f"forged rows in {them}")


def check_move_refused(conn: psycopg.Connection[Any], ids: dict[str, list[int]]) -> None:
    with scorer.check("moving a row to another tenant is refused") as c:
        mine, victim = ids[TENANT_A][0], TENANT_ID[TENANT_B]
        with acting_as(conn, TENANT_A, TENANT_ID[TENANT_A]) as actor:
            edit = actor.attempt(f"UPDATE {TABLE} SET body = body || ' (edited)' WHERE id = %s", (mine,))
            c.equal(edit.describe(), "done, 1 row", "tenant A editing its own row")
            moved = actor.attempt(f"UPDATE {TABLE} SET tenant_id = %s WHERE id = %s", (victim, mine))
            after = actor.truth(f"SELECT tenant_id FROM {TABLE} WHERE id = %s", (mine,))
            c.evidence(f"tenant A setting row {mine} to tenant_id={victim}: {moved.describe()}; now: {after!r}")
            c.equal(moved.describe(), REFUSED,
                    f"tenant A moving its row {mine} to tenant_id {victim} (tenant B's) was not refused")
            c.equal(after, [(TENANT_ID[TENANT_A],)], f"row {mine}'s tenant_id afterwards")


def check_no_cross_writes(conn: psycopg.Connection[Any], ids: dict[str, list[int]]) -> None:
    with scorer.check("another tenant's rows cannot be updated or deleted") as c:
        target, victim = ids[TENANT_B][0], TENANT_ID[TENANT_B]
        with acting_as(conn, TENANT_A, TENANT_ID[TENANT_A]) as actor:
            before = actor.truth(f"SELECT id, tenant_id, owner, body FROM {TABLE} WHERE tenant_id = %s ORDER BY id",
                                 (victim,))
            attempts = [
                (f"UPDATE {TABLE} SET body = 'defaced' WHERE id = %s", (target,), f"updating tenant B's row {target}"),
                (f"DELETE FROM {TABLE} WHERE id = %s", (target,), f"deleting tenant B's row {target}"),
                (f"DELETE FROM {TABLE} WHERE tenant_id = %s", (victim,), "deleting every tenant B row"),
            ]
            for query, params, what in attempts:
                done = actor.attempt(query, params)
                c.equal(done.describe(), "done, 0 rows", f"tenant A {what}")
            # Without a WHERE clause a write reads no column, so PostgreSQL applies only the
            # UPDATE/DELETE policy, not the SELECT one: a loose write policy shows only here.
            own = f"done, {len(ids[TENANT_A])} rows"
            for query, what in ((f"UPDATE {TABLE} SET body = 'defaced'", "updating without a WHERE clause"),
                                (f"DELETE FROM {TABLE}", "deleting without a WHERE clause")):
                c.equal(actor.attempt(query).describe(), own, f"tenant A {what}")
            after = actor.truth(f"SELECT id, tenant_id, owner, body FROM {TABLE} WHERE tenant_id = %s ORDER BY id",
                                (victim,))
            c.evidence(f"tenant B's rows after: {after!r}")
            c.equal(after, before, "tenant B's rows after tenant A's writes")


def skip_all(names: Sequence[str]) -> None:
    """Fail the checks that need an applied schema, so they do not silently vanish from the report."""
    for name in names:
        with scorer.check(name) as c:
            c.fail(NOT_RUN)


CHECK_NAMES_AFTER_APPLY = (
    "row-level security is enabled and forced",
    "policies cover every command with a WITH CHECK",
    "tenant A sees exactly its own rows",
    "tenant B sees exactly its own rows",
    "without a known tenant nothing is visible",
    "the table owner is bound by the policies",
    "a forged insert into another tenant is refused",
    "moving a row to another tenant is refused",
    "another tenant's rows cannot be updated or deleted",
)


def run_checks(conn: psycopg.Connection[Any], path: Path) -> None:
    """Every check, in order; the report lists all of them whatever happens."""
    ids = check_applies(conn, path)
    if ids is None:
        skip_all(CHECK_NAMES_AFTER_APPLY)
        return
    check_rls_forced(conn)
    check_policies(conn)
    check_isolated(conn, ids, TENANT_A)
    check_isolated(conn, ids, TENANT_B)
    check_no_tenant(conn)
    check_owner_bound(conn, ids)
    check_forged_insert(conn)
    check_move_refused(conn, ids)
    check_no_cross_writes(conn, ids)


def main() -> None:
    # evalrun stops a scorer with SIGTERM on timeout: leave through `finally` so the scratch database is dropped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.monotonic()
    try:
        url = os.environ.get("DATABASE_URL")
        if not url:
            raise SetupError("DATABASE_URL is not set; run under `evalrun t2` (services = [\"db\"]) "
                             "or export a PostgreSQL superuser URL")
        path = resolve_schema(os.environ)
        with scratch_database(url) as conn:
            scorer.metric("schema", _display(path))
            run_checks(conn, path)
    except SetupError as exc:
        print(f"rls-isolation: {exc}", file=sys.stderr)
        sys.exit(2)
    scorer.metric("total_ms", round((time.monotonic() - started) * 1000))
    scorer.finish()


def _display(path: Path) -> str:
    return path.name if path.parent == HERE else str(path)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


if __name__ == "__main__":
    main()
