-- rls-isolation: the subject under test. Two tenants share one documents
-- table; row-level security keeps each to its own rows.
--
-- The application connects, runs `SET ROLE tenant_a` (or tenant_b) and
-- `SET app.tenant = '<id>'`; tenant_a is id 1, tenant_b is id 2. The table
-- belongs to docs_owner, a plain role: FORCE makes the policies bind it too,
-- and no role here may bypass row-level security.
--
-- score.py applies this file as a superuser to a fresh database; roles are
-- cluster-wide, so they are created only if missing and their attributes are
-- set every time (a re-run must not inherit a role an earlier run changed).

DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['docs_owner', 'tenant_a', 'tenant_b'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN', name);
        END IF;
        EXECUTE format('ALTER ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS', name);
    END LOOP;
END
$$;

CREATE TABLE documents (
    id        integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id integer NOT NULL,
    owner     text    NOT NULL DEFAULT current_user,
    body      text    NOT NULL
);
ALTER TABLE documents OWNER TO docs_owner;

GRANT SELECT, INSERT, UPDATE, DELETE ON documents TO tenant_a, tenant_b;

ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE documents FORCE ROW LEVEL SECURITY;

-- One policy per command, so each reads on its own in review.
CREATE POLICY documents_select ON documents FOR SELECT
    USING (tenant_id = current_setting('app.tenant')::int);

CREATE POLICY documents_insert ON documents FOR INSERT
    WITH CHECK (tenant_id = current_setting('app.tenant')::int);

CREATE POLICY documents_update ON documents FOR UPDATE
    USING (tenant_id = current_setting('app.tenant')::int)
    WITH CHECK (tenant_id = current_setting('app.tenant')::int);

CREATE POLICY documents_delete ON documents FOR DELETE
    USING (tenant_id = current_setting('app.tenant')::int);
