-- pgoutbox schema, version 8.

-- Where each registered relay takes its events from: 'TABLE' for OutboxRelay (it claims pending
-- rows), 'WAL:<slot>' for WalRelay (it reads the slot and leaves the table to its drainer). A table
-- relay beside a WAL relay, or WAL relays on two slots, would each publish the same events, so a
-- relay refuses to start while a live relay reads from another source. Rows written by a library
-- before version 8 name no source (NULL): they are checked for ordering and dead-letter policy only,
-- as before, so a fleet of either kind can be upgraded one instance at a time.
ALTER TABLE outbox_relays ADD COLUMN source varchar(80);
