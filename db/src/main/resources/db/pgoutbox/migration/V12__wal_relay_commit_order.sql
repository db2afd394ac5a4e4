-- pgoutbox schema, version 12.

-- The place in commit order of a row the WAL relay's reader parked: the commit LSN of the
-- transaction that wrote it, as the slot streamed it (pgoutput's Begin message), or 0 for a row
-- parked without being read from the slot (the events pending when a slot was created: they
-- committed before it, and drain in position order, before any event read from the slot). The
-- drainer of a WAL relay claims an aggregate's parked rows in (commit_lsn, position) order, which
-- is the order the slot gave them: with writers that are not serialized per aggregate, a later
-- position can commit first. Null on every row a relay did not park, and on a row parked by hand
-- until the reader reads it (the drainer leaves such a row alone until then). Adding a nullable
-- column rewrites nothing.
ALTER TABLE outbox_events ADD COLUMN commit_lsn bigint;

-- Rows parked by an earlier version: their commit order was not recorded. They drain as they did
-- (position order), before anything read from the slot from now on.
UPDATE outbox_events SET commit_lsn = 0 WHERE parked AND processed_at IS NULL;

-- The drainer's probe for an earlier parked row of the candidate's aggregate, and its run behind
-- the head, in commit order. Parked rows are normally a handful; building it reads the table once
-- while writers wait: on a large outbox create it beforehand with CREATE INDEX CONCURRENTLY and the
-- same definition, and this migration leaves it as it is.
CREATE INDEX IF NOT EXISTS outbox_events_parked_order_idx
    ON outbox_events (aggregate_type, aggregate_id, commit_lsn, position)
    WHERE processed_at IS NULL AND parked;
