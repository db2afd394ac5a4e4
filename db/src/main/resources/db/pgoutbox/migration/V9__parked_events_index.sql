-- pgoutbox schema, version 9.

-- Unpublished events a WAL relay's reader parked for its drainer (WalRelay): normally a handful of
-- rows, and none at all for a table relay. The drainer claims parked rows only, every
-- pollInterval; through the pending index each of its claims walked every pending row the reader
-- had not published yet to find none parked, so while the reader drained a backlog of 600,000
-- events the drainer's empty claims kept a backend busy about half the time. A published event
-- leaves it (processed_at is set); writers never enter it (their rows are inserted unparked).
-- Building it reads the table once while writers wait; on a large outbox create it beforehand with
-- CREATE INDEX CONCURRENTLY and the same definition, and this migration leaves it as it is.
CREATE INDEX IF NOT EXISTS outbox_events_parked_idx
    ON outbox_events (position)
    WHERE processed_at IS NULL AND parked;
