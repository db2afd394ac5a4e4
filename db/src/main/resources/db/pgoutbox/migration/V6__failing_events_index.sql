-- pgoutbox schema, version 6.

-- Unpublished events that failed at least once: backing off (retry_after set) or dead. Normally a
-- handful of rows. The dead-letter count and the blocked-aggregate count (OutboxAdmin.stats(), read
-- by every relay's gauges every metricsRefreshInterval) read this index instead of every pending
-- row: with 300,000 events pending, those two counts read the whole backlog in about 2 s per
-- refresh, while the relay that fell behind needed the time to catch up. A published event leaves
-- it (processed_at is set), as does an event an operator retries (retry_after and dead_at reset).
CREATE INDEX outbox_events_failing_idx
    ON outbox_events (aggregate_type, aggregate_id, position)
    WHERE processed_at IS NULL AND (dead_at IS NOT NULL OR retry_after IS NOT NULL);
