-- pgoutbox least-privilege grants, for three roles the host creates itself (with LOGIN, or as
-- groups its login roles are members of). Run it after OutboxSchema.migrate, as the owner of the
-- outbox schema (the role that ran the migrations) or a superuser. Idempotent: GRANT twice is fine.
--
-- With psql, the variables are quoted as identifiers (:"name"):
--   psql -v schema=outbox -v writer_role=orders_app -v relay_role=orders_relay \
--        -v consumer_role=orders_consumer -f grants.sql
-- From Java: OutboxRoles.grant(dataSource, "outbox", "orders_app", "orders_relay", "orders_consumer")
-- (classpath: db/pgoutbox/roles/grants.sql), which checks every name is a plain identifier first.
--
-- Nothing here is granted on PUBLIC: the migrations grant nothing, so these three roles hold
-- exactly what is below (plus what PUBLIC holds by default). The only revokes take back the
-- table-wide INSERT and UPDATE on outbox_events that earlier versions of this script granted, now
-- granted by column.

-- The writer: the application's role, which appends events in its own transactions.
-- USAGE: to name objects of the schema at all.
GRANT USAGE ON SCHEMA :"schema" TO :"writer_role";
-- INSERT, and nothing else: a writer cannot read, change or delete events, published or not.
-- Outbox.append inserts without RETURNING (it makes the ids), so it needs no SELECT. It needs
-- nothing more for:
--  * position (GENERATED ALWAYS AS IDENTITY): the identity sequence is advanced on the table's
--    INSERT privilege, no USAGE on the sequence (unlike a serial column);
--  * the notify trigger: PostgreSQL checks no EXECUTE privilege when a trigger fires (so even a
--    REVOKE EXECUTE .. FROM PUBLIC on pgoutbox_notify() changes nothing), pg_notify, hashtext and
--    the advisory lock functions it calls are executable by PUBLIC, and NOTIFY channels have no
--    privileges;
--  * serializeWritersPerAggregate(true): pg_advisory_xact_lock and hashtextextended are
--    executable by PUBLIC.
-- By column: the six the writer fills. A row it inserts is always new (attempts 0, not published,
-- not dead, not backing off, not parked): it cannot forge a dead letter or mark its own events
-- sent, and PostgreSQL refuses an INSERT that names any other column.
REVOKE INSERT ON TABLE :"schema".outbox_events FROM :"writer_role";
GRANT INSERT (id, aggregate_type, aggregate_id, event_type, payload, headers)
    ON TABLE :"schema".outbox_events TO :"writer_role";

-- The relay: claims, publishes and marks events; OutboxAdmin (stats, dead letters, retention).
GRANT USAGE ON SCHEMA :"schema" TO :"relay_role";
-- SELECT: the claim query and the stats; UPDATE: processed_at, attempts, retry_after, last_error,
-- error_history, dead_at, parked (and FOR UPDATE SKIP LOCKED, which needs UPDATE of a column); DELETE:
-- OutboxAdmin.discard and the retention purge of processed events. No INSERT: the relay never
-- writes events.
-- UPDATE by column: the delivery columns only, so the relay cannot rewrite an event's payload,
-- headers, type or aggregate (parked: the WAL relay's flag).
REVOKE UPDATE ON TABLE :"schema".outbox_events FROM :"relay_role";
GRANT SELECT, DELETE ON TABLE :"schema".outbox_events TO :"relay_role";
GRANT UPDATE (attempts, retry_after, last_error, error_history, processed_at, dead_at, parked)
    ON TABLE :"schema".outbox_events TO :"relay_role";
-- The view of dead letters (OutboxAdmin.deadLetters, deadLetterCount).
GRANT SELECT ON TABLE :"schema".outbox_dead_letters TO :"relay_role";
-- The relay registry (migration V3): each relay adds, refreshes and deletes its own row, reads the
-- others' to refuse a conflicting configuration, and deletes rows whose heartbeat expired.
GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE :"schema".outbox_relays TO :"relay_role";
-- LISTEN needs no privilege. OutboxAdmin.oldestTransactionAge reads pg_stat_activity, where a
-- role without pg_read_all_stats sees xact_start only of its own sessions: to make the vacuum
-- warning see the writers' long transactions too, also run (PostgreSQL 10+, as a superuser):
--   GRANT pg_read_all_stats TO <relay_role>;

-- The consumer: Inbox.handleOnce (INSERT .. ON CONFLICT DO NOTHING) and Inbox.purgeProcessed.
GRANT USAGE ON SCHEMA :"schema" TO :"consumer_role";
-- INSERT: record a handled event (ON CONFLICT DO NOTHING needs no more); SELECT and DELETE: the
-- purge, which finds old rows by age and deletes them.
GRANT SELECT, INSERT, DELETE ON TABLE :"schema".processed_events TO :"consumer_role";
-- The purge locks its batch with SELECT .. FOR UPDATE SKIP LOCKED, which PostgreSQL allows only
-- with UPDATE on at least one column: one column is enough, and no code ever updates an inbox row.
GRANT UPDATE (processed_at) ON TABLE :"schema".processed_events TO :"consumer_role";
