-- pgoutbox schema, version 10.

-- [jooq ignore start]
-- A session or transaction may turn the wake-up notification off: SET pgoutbox.notify = off (or
-- options=-c pgoutbox.notify=off in the JDBC URL, or ALTER ROLE ... SET pgoutbox.notify = off).
-- PostgreSQL refuses PREPARE TRANSACTION in a transaction that sent NOTIFY, so a writer under
-- two-phase commit (XA, a JTA transaction manager with two resources) could not commit an event
-- at all while the trigger notified. With the setting off the trigger does nothing: the events
-- commit silently and relays find them by their polls (pollInterval) and the full scans from the
-- first pending row, which also find a prepared transaction committed long after its insert. Any
-- other value, or none, notifies as before; an unreadable value never fails the commit.
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
        -- Read once per transaction, with the flag set first, so later rows cost what they did.
        IF lower(coalesce(current_setting('pgoutbox.notify', true), '')) IN ('off', 'false', 'no', '0') THEN
            RETURN NULL;
        END IF;
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
-- [jooq ignore stop]
