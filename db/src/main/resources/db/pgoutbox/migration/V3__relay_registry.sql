-- pgoutbox schema, version 3.

-- The relays running on this outbox, so that they agree on the rules that only hold when every
-- relay follows them: a relay refuses to start when a live relay's ordering or dead-letter policy
-- differs from its own. A relay adds its row at start, refreshes heartbeat_at while it runs and
-- deletes the row when it stops; the row of a relay that crashed stops counting once its heartbeat
-- is older than the expiry (see OutboxRelay), so a crash never blocks a new configuration for long.
CREATE TABLE outbox_relays (
    -- One per running relay instance (several processes may share a relay name).
    instance_id        uuid         NOT NULL,
    relay_name         varchar(100) NOT NULL,
    ordering           varchar(32)  NOT NULL,
    dead_letter_policy varchar(32)  NOT NULL,
    started_at         timestamptz  NOT NULL DEFAULT now(),
    heartbeat_at       timestamptz  NOT NULL DEFAULT now(),
    CONSTRAINT outbox_relays_pkey PRIMARY KEY (instance_id)
);
