-- pgoutbox schema, version 2.

-- [jooq ignore start]
-- The wake-up channel always fits PostgreSQL's 63-byte identifier limit (pg_notify refuses longer
-- names, LISTEN silently truncates them): 'pgoutbox_' || schema when that fits (schemas of up to
-- 54 characters, the name version 1 used), else 'pgoutbox_' || the first 21 characters || '_' ||
-- md5(schema). OutboxSchema.notifyChannel(schema) computes the same name for LISTEN.
CREATE OR REPLACE FUNCTION pgoutbox_notify() RETURNS trigger
    LANGUAGE plpgsql AS
$$
BEGIN
    PERFORM pg_notify(
        CASE
            WHEN length(TG_TABLE_SCHEMA) <= 54 THEN 'pgoutbox_' || TG_TABLE_SCHEMA
            ELSE 'pgoutbox_' || left(TG_TABLE_SCHEMA, 21) || '_' || md5(TG_TABLE_SCHEMA)
        END,
        '');
    RETURN NULL;
END;
$$;
-- [jooq ignore stop]
