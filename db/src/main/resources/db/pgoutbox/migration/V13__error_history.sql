-- pgoutbox schema, version 13.

-- The failures of an event, newest last: what an operator reads before retrying it (admin show,
-- the console, OutboxAdmin.event). last_error keeps the newest reason as before; this column keeps
-- the last ten attempts that failed, each {"attempt": n, "at": time, "error": reason, "dead": bool},
-- appended by the relay in the same UPDATE that records the failure (retry or dead letter). Ten
-- reasons of at most RelayConfig.lastErrorMaxLength characters each bound its size. A retry by an
-- operator resets attempts and keeps the history. Null for an event that never failed.
-- Adding a nullable column without a default rewrites nothing: writers do not wait.
ALTER TABLE outbox_events ADD COLUMN IF NOT EXISTS error_history jsonb;

-- [jooq ignore start]
-- Roles that record failures today (grants.sql gives the relay UPDATE by column) may write the new
-- column too, so a relay under least privilege keeps recording failures after this migration
-- without a regrant. Roles with table-wide UPDATE need nothing.
DO
$$
DECLARE
    grantee_name pg_catalog.text;
BEGIN
    FOR grantee_name IN
        SELECT DISTINCT pg_catalog.quote_ident(r.rolname)
        FROM pg_catalog.pg_attribute a
        CROSS JOIN LATERAL pg_catalog.aclexplode(a.attacl) acl
        JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) acl.grantee
        WHERE a.attrelid OPERATOR(pg_catalog.=) 'outbox_events'::pg_catalog.regclass
          AND a.attname OPERATOR(pg_catalog.=) 'last_error'
          AND acl.privilege_type OPERATOR(pg_catalog.=) 'UPDATE'
    LOOP
        EXECUTE 'GRANT UPDATE (error_history) ON TABLE outbox_events TO ' OPERATOR(pg_catalog.||)
                grantee_name;
    END LOOP;
END
$$;
-- [jooq ignore stop]
