-- pgoutbox schema, version 11.

-- [jooq ignore start]
-- The notify trigger cannot be turned against the sessions it runs in, and no other role can make a
-- writer's commit wait.
--
-- Fixed search_path: the function runs in every writer's session, as that writer, at commit. With
-- the session's own path, a role that could create objects in a schema on it (public on PostgreSQL
-- 14 and older, or any schema listed before pg_catalog) planted overloads that matched our
-- arguments more exactly than pg_catalog's own (md5(name), length(name) for TG_TABLE_SCHEMA, of
-- type name), and they ran as the writer, or as a superuser who inserted a row. Now the function's
-- path is pg_catalog, then pg_temp (last, so that no temporary object is found before a catalog
-- one; functions and operators are never looked up in pg_temp at all), and every function, operator and type in
-- it is named with its schema as well.
--
-- Non-blocking: the shared lock (channel key, 1) that tells relays "a writer is committing" is now
-- only tried. Any role may take advisory locks, and the trigger used to wait for it; a session that
-- held (channel key, 1) exclusively stopped every writer of the outbox at its commit. A writer that
-- cannot take it commits at once, as before: it announces itself if it takes (channel key, 2) or
-- commits late, and is otherwise found by a relay's recheck or its next poll (relays treat a key
-- they cannot take as "a writer is committing", so a session holding it makes relays claim again
-- every few milliseconds, never wait). The announcer lock (channel key, 2) always was a try.
-- docs/security.md lists what a session holding these keys can and cannot do, and how to revoke
-- the advisory lock functions from roles that have no business taking them.
CREATE OR REPLACE FUNCTION pgoutbox_notify() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
AS
$$
DECLARE
    sent_flag pg_catalog.text := 'pgoutbox.notified_' OPERATOR(pg_catalog.||)
                                 pg_catalog.md5(TG_TABLE_SCHEMA::pg_catalog.text);
    channel pg_catalog.text;
    channel_key pg_catalog.int4;
BEGIN
    IF COALESCE(pg_catalog.current_setting(sent_flag, true), '') OPERATOR(pg_catalog.=) '' THEN
        PERFORM pg_catalog.set_config(sent_flag, 'on', true);
        -- Read once per transaction, with the flag set first, so later rows cost what they did.
        IF pg_catalog.lower(COALESCE(pg_catalog.current_setting('pgoutbox.notify', true), ''))
               OPERATOR(pg_catalog.=) ANY ('{off,false,no,0}'::pg_catalog.text[]) THEN
            RETURN NULL;
        END IF;
        channel := CASE
            WHEN pg_catalog.length(TG_TABLE_SCHEMA::pg_catalog.text) OPERATOR(pg_catalog.<=) 54
                THEN 'pgoutbox_' OPERATOR(pg_catalog.||) TG_TABLE_SCHEMA::pg_catalog.text
            ELSE 'pgoutbox_' OPERATOR(pg_catalog.||) pg_catalog.left(TG_TABLE_SCHEMA::pg_catalog.text, 21)
                 OPERATOR(pg_catalog.||) '_' OPERATOR(pg_catalog.||) pg_catalog.md5(TG_TABLE_SCHEMA::pg_catalog.text)
        END;
        channel_key := pg_catalog.hashtext(channel);
        PERFORM pg_catalog.pg_try_advisory_xact_lock_shared(channel_key, 1);
        IF pg_catalog.pg_try_advisory_xact_lock(channel_key, 2)
           OR pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) pg_catalog.transaction_timestamp()
                  OPERATOR(pg_catalog.>=) COALESCE(
                  NULLIF(pg_catalog.current_setting('pgoutbox.late_commit_notify_after', true), ''),
                  '50 milliseconds')::pg_catalog.interval THEN
            PERFORM pg_catalog.pg_notify(channel, NEW.position::pg_catalog.text);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

-- A retry_after of infinity (the relay computes finite ones only) held an aggregate back for good:
-- its head was never due again. A forged one is now refused with this constraint's name. NOT VALID:
-- adding it reads no existing row, and writers do not wait for a scan.
ALTER TABLE outbox_events
    ADD CONSTRAINT outbox_events_retry_after_finite
    CHECK (retry_after IS NULL OR pg_catalog.isfinite(retry_after)) NOT VALID;
-- [jooq ignore stop]
