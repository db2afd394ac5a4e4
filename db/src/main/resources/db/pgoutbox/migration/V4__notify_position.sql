-- pgoutbox schema, version 4.

-- [jooq ignore start]
-- The wake-up now says where a transaction's new events start: its payload is the lowest position
-- the transaction's first inserting statement wrote (read from the statement's transition table;
-- positions are taken in order, so later statements of the transaction only wrote higher ones).
-- A relay that has moved its low-water mark past a position whose writer had not committed yet (a
-- writer held up between its insert and its commit) learns at that commit where to look, instead
-- of finding the event at its next full scan a second or more later. Still one notification per
-- transaction, however many statements and rows: later statements see the transaction-local flag
-- and send nothing (a savepoint rolled back takes its flag and its notification with it). Relays
-- ignore an empty payload (schema versions 1 to 3); a payload never changes which events are
-- published, only where a relay looks first.
CREATE OR REPLACE FUNCTION pgoutbox_notify() RETURNS trigger
    LANGUAGE plpgsql AS
$$
DECLARE
    sent_flag text := 'pgoutbox.notified_' || md5(TG_TABLE_SCHEMA);
    lowest bigint;
BEGIN
    IF coalesce(current_setting(sent_flag, true), '') = '' THEN
        SELECT min(position) INTO lowest FROM pgoutbox_inserted;
        IF lowest IS NULL THEN
            RETURN NULL; -- the statement inserted nothing: nothing to announce
        END IF;
        PERFORM set_config(sent_flag, 'on', true);
        PERFORM pg_notify(
            CASE
                WHEN length(TG_TABLE_SCHEMA) <= 54 THEN 'pgoutbox_' || TG_TABLE_SCHEMA
                ELSE 'pgoutbox_' || left(TG_TABLE_SCHEMA, 21) || '_' || md5(TG_TABLE_SCHEMA)
            END,
            lowest::text);
    END IF;
    RETURN NULL;
END;
$$;

-- Recreated with the transition table the function reads.
DROP TRIGGER outbox_events_notify ON outbox_events;
CREATE TRIGGER outbox_events_notify
    AFTER INSERT ON outbox_events
    REFERENCING NEW TABLE AS pgoutbox_inserted
    FOR EACH STATEMENT
    EXECUTE FUNCTION pgoutbox_notify();
-- [jooq ignore stop]
