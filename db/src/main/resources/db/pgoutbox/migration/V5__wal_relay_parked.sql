-- pgoutbox schema, version 5.

-- Set by the WAL relay (WalRelay) on rows it leaves to the table relay: an event whose publish
-- failed, and the later events of its aggregate while that aggregate is parked. The table relay of
-- a WAL relay claims only parked rows; the reader publishes only rows that are not. OutboxRelay
-- ignores the column. Adding a column with a constant default rewrites nothing.
ALTER TABLE outbox_events ADD COLUMN parked boolean NOT NULL DEFAULT false;
