-- pgoutbox schema, version 7.

-- Vacuum must not truncate the outbox. Inserts, the relay's marks and retention's deletes keep
-- moving rows into free space anywhere in the table, so its last pages are often empty after a
-- vacuum, and truncating them takes an ACCESS EXCLUSIVE lock on the table: every writer's insert
-- and every relay's claim waits behind it. In an hour at 2,000 events/s, autovacuum took that lock
-- several times a minute and each pass showed as a commit-to-publish p99 of 200 ms to 1.5 s. The
-- space stays with the table and is reused by the next inserts.
-- (Storage settings only: jOOQ's code generation has nothing to read here.)
-- [jooq ignore start]
ALTER TABLE outbox_events SET (vacuum_truncate = off);
-- [jooq ignore stop]
