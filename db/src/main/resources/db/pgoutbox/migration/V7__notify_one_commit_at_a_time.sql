-- pgoutbox schema, version 7.

-- [jooq ignore start]
-- The wake-up no longer makes writers commit one at a time. A transaction that sent NOTIFY holds
-- the notification queue's lock from before its commit record until the commit is flushed, so
-- notifying commits cannot share a disk flush: on a server with fsync on, writers were capped near
-- one commit per flush (about 1,000 a second measured on PostgreSQL 15), whatever their number.
--
-- Now the trigger runs when the transaction commits (a deferred constraint trigger, once per
-- transaction: the first row fired sets a transaction-local flag) and, per outbox schema, takes two
-- transaction-level advisory locks, both released when the transaction has ended and its rows are
-- visible:
--   (channel key, 1) shared, always: "a writer is committing"; writers never wait for each other
--                    on it, a relay probes it (see below);
--   (channel key, 2) exclusive, if free: only its holder, the announcer, sends the notification.
-- So at most one commit of the outbox is notifying at any moment and the others share flushes.
-- A writer that found (channel key, 2) taken commits silently while the announcer is still
-- committing: the announcer's notification reaches the relays after that writer took its shared
-- lock, and a relay woken by a notification first checks, with pg_try_advisory_lock on
-- (channel key, 1), whether any writer is still committing. If one is, it claims now and again
-- shortly until none is: the silent writer's rows are claimed once they are visible. The channel
-- key is hashtext(channel); relays compute it the same way.
--
-- The payload is still the lowest position the transaction wrote: deferred events fire in the
-- order they were queued, so the first row fired is the transaction's first and lowest. A relay
-- claims from a low-water mark that rises to a head once it has stood for 100 ms, so a writer that
-- commits long after its insert may have written below it; only the announced position sends the
-- relay back there at once. So a transaction that commits 50 ms or more after it began always
-- notifies, silent or not: late commits are rare, and they are the ones that need it. A session
-- may change the 50 ms with the setting pgoutbox.late_commit_notify_after (an interval).
-- If an announcer fails after its trigger ran (a later deferred constraint, a serialization
-- failure at commit), writers that stayed silent behind it are found by the relay's next poll
-- (pollInterval).
--
-- SET CONSTRAINTS ALL IMMEDIATE makes the trigger run at the end of the inserting statement
-- instead: still correct, but the shared lock is then held until the transaction ends and relays
-- see a writer committing for that long (they claim every few milliseconds meanwhile).
CREATE OR REPLACE FUNCTION pgoutbox_notify() RETURNS trigger
    LANGUAGE plpgsql AS
$$
DECLARE
    sent_flag text := 'pgoutbox.notified_' || md5(TG_TABLE_SCHEMA);
    channel text;
    channel_key integer;
BEGIN
    IF coalesce(current_setting(sent_flag, true), '') = '' THEN
        PERFORM set_config(sent_flag, 'on', true);
        channel := CASE
            WHEN length(TG_TABLE_SCHEMA) <= 54 THEN 'pgoutbox_' || TG_TABLE_SCHEMA
            ELSE 'pgoutbox_' || left(TG_TABLE_SCHEMA, 21) || '_' || md5(TG_TABLE_SCHEMA)
        END;
        channel_key := hashtext(channel);
        PERFORM pg_advisory_xact_lock_shared(channel_key, 1);
        IF pg_try_advisory_xact_lock(channel_key, 2)
           OR clock_timestamp() - transaction_timestamp() >= coalesce(
                  nullif(current_setting('pgoutbox.late_commit_notify_after', true), ''),
                  '50 milliseconds')::interval THEN
            PERFORM pg_notify(channel, NEW.position::text);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

DROP TRIGGER outbox_events_notify ON outbox_events;
CREATE CONSTRAINT TRIGGER outbox_events_notify
    AFTER INSERT ON outbox_events
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    EXECUTE FUNCTION pgoutbox_notify();
-- [jooq ignore stop]
