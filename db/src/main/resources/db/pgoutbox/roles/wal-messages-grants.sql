-- What the message transport (Outbox.Builder.transport(MESSAGES), WalRelay.Builder.transport(
-- MESSAGES)) needs beyond grants.sql and wal-relay-grants.sql. Run it as a superuser (only a
-- superuser may change the privileges of pg_catalog's functions), in the outbox's database
-- (function privileges are per database). Idempotent.
--
-- With psql (the writer role once as an identifier and once as a literal):
--   psql -v schema=outbox -v writer_role=orders_app -v relay_role=orders_relay \
--        -f wal-messages-grants.sql
-- From Java: OutboxRoles.grantWalMessages(superuser, "outbox", "orders_app", "orders_relay")
-- (classpath: db/pgoutbox/roles/wal-messages-grants.sql), which checks every name first.

-- pg_logical_emit_message is executable by PUBLIC out of the box (PostgreSQL 14-18: its proacl is
-- null): any role of the database could write a message with the outbox's prefix into the WAL,
-- and the WAL relay would publish it as an event. Taken from PUBLIC, on every overload (text and
-- bytea content; PostgreSQL 17 added a flush argument), and given to the writer role only. The
-- WAL relay in messages mode refuses to start until PUBLIC has lost it. Superusers keep it.
SELECT pg_catalog.set_config('pgoutbox.writer_role', :'writer_role', false);
DO $$ DECLARE f pg_catalog.regprocedure; BEGIN FOR f IN SELECT p.oid::pg_catalog.regprocedure FROM pg_catalog.pg_proc p WHERE p.proname = 'pg_logical_emit_message' AND p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace LOOP EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f); EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I', f, pg_catalog.current_setting('pgoutbox.writer_role')); END LOOP; END $$;

-- The relay parks an event whose publish failed by inserting the row it never had (parked, with
-- its place in commit order), then records the failure on it (UPDATE, granted by grants.sql).
-- By column: the event's own columns and the WAL relay's two; never attempts, dead_at or
-- processed_at, which only the failure's UPDATE sets.
GRANT INSERT (id, aggregate_type, aggregate_id, event_type, payload, headers, created_at, parked,
    commit_lsn)
    ON TABLE :"schema".outbox_events TO :"relay_role";
