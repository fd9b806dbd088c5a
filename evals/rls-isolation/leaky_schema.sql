-- rls-isolation: a schema that passes review and still leaks. The eval must
-- FAIL on it (run it with RLS_SCHEMA=leaky_schema.sql).
--
-- Everything a reviewer looks for is here: RLS enabled and forced, a plain
-- owner, no role that bypasses RLS, a policy for every command, and every
-- INSERT/UPDATE policy has a WITH CHECK. The flaw is the "authors may always
-- read and write their own documents" shortcut, `OR owner = current_user`:
-- `owner` defaults to the writing role, so tenant A can plant a row in tenant
-- B (`tenant_id = 2`), and move its own rows there, because the new row is
-- "its own". Every seeded row is owned by its own tenant's role, so the
-- per-tenant read checks still pass; the forged-insert and move checks must
-- not. (The shortcut is needed on SELECT too: for an UPDATE that reads the
-- table, PostgreSQL also holds the new row to the SELECT policies.)

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

-- Authors may always read and write their own documents.
CREATE POLICY documents_select ON documents FOR SELECT
    USING (tenant_id = current_setting('app.tenant')::int OR owner = current_user);

CREATE POLICY documents_insert ON documents FOR INSERT
    WITH CHECK (tenant_id = current_setting('app.tenant')::int OR owner = current_user);

CREATE POLICY documents_update ON documents FOR UPDATE
    USING (tenant_id = current_setting('app.tenant')::int)
    WITH CHECK (tenant_id = current_setting('app.tenant')::int OR owner = current_user);

CREATE POLICY documents_delete ON documents FOR DELETE
    USING (tenant_id = current_setting('app.tenant')::int);
