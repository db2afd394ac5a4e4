-- pgoutbox schema, version 1.
-- Applied by OutboxSchema.migrate(dataSource, schema) into the schema the host chooses; the
-- statements are unqualified so that Flyway's search_path places them there. Hosts that run their
-- own migration tool can copy this file (classpath: db/pgoutbox/migration/V1__outbox.sql).

-- The outbox: one row per event, written in the host's transaction, published by the relay.
CREATE TABLE outbox_events (
    -- Time-ordered UUIDv7 chosen by the writer; the default only serves hand-written inserts.
    id             uuid         NOT NULL DEFAULT gen_random_uuid(),
    -- Tie-break for events of one transaction, which share created_at; the relay's order.
    position       bigint       GENERATED ALWAYS AS IDENTITY,
    aggregate_type varchar(100) NOT NULL,
    aggregate_id   varchar(100) NOT NULL,
    event_type     varchar(100) NOT NULL,
    payload        jsonb        NOT NULL,
    -- Trace context and correlation ids, forwarded to the broker as message headers.
    headers        jsonb        NOT NULL DEFAULT '{}',
    attempts       integer      NOT NULL DEFAULT 0,
    -- Not before this time; set from the relay's exponential backoff after a failed publish.
    retry_after    timestamptz,
    last_error     text,
    created_at     timestamptz  NOT NULL DEFAULT now(),
    processed_at   timestamptz,
    dead_at        timestamptz,
    CONSTRAINT outbox_events_pkey PRIMARY KEY (id)
);

-- The claim query reads only unprocessed rows: these partial indexes keep its cost proportional to
-- the pending events, never to the processed history.
-- Oldest pending first (no aggregate starves).
CREATE INDEX outbox_events_pending_idx
    ON outbox_events (position)
    WHERE processed_at IS NULL;
-- The head of each aggregate and the run behind it.
CREATE INDEX outbox_events_pending_aggregate_idx
    ON outbox_events (aggregate_type, aggregate_id, position)
    WHERE processed_at IS NULL;
-- Retention finds processed rows by age; writers never touch this index (their rows are pending).
CREATE INDEX outbox_events_processed_at_idx
    ON outbox_events (processed_at)
    WHERE processed_at IS NOT NULL;

-- Events that exhausted their attempts or failed permanently, and were not retried or discarded.
CREATE VIEW outbox_dead_letters AS
SELECT id, position, aggregate_type, aggregate_id, event_type, payload, headers,
       attempts, last_error, created_at, dead_at
FROM outbox_events
WHERE dead_at IS NOT NULL
  AND processed_at IS NULL;

-- The inbox: one row per (consumer, event) already handled, so redeliveries change nothing.
CREATE TABLE processed_events (
    consumer     varchar(200) NOT NULL,
    event_id     uuid         NOT NULL,
    processed_at timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT processed_events_pkey PRIMARY KEY (consumer, event_id)
);
-- Retention deletes old inbox rows by age.
CREATE INDEX processed_events_processed_at_idx
    ON processed_events (processed_at);

-- [jooq ignore start]
-- A hot queue table: vacuum after 1% churn instead of 20%, without cost-based throttling, so dead
-- tuples from published events do not pile up in front of the claim query.
ALTER TABLE outbox_events SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_analyze_scale_factor = 0.02,
    autovacuum_vacuum_cost_delay = 0
);
ALTER TABLE processed_events SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.05
);

-- Wake-up for the relay. Statement-level with a constant payload: one transaction sends one
-- notification however many events it writes, and PostgreSQL folds identical notifications.
-- The channel is per schema so that several outboxes in one database do not wake each other.
-- Turn it off with OutboxSchema.setNotifyTrigger(dataSource, schema, false) (poll-only relays).
CREATE FUNCTION pgoutbox_notify() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify('pgoutbox_' || TG_TABLE_SCHEMA, '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER outbox_events_notify
    AFTER INSERT ON outbox_events
    FOR EACH STATEMENT
    EXECUTE FUNCTION pgoutbox_notify();
-- [jooq ignore stop]
