-- Plants, in the schema __SHADOW__ (replaced by the test), a recording copy of every pg_catalog function and operator that
-- pgoutbox's SQL could resolve by name, in two forms:
--   * the same signature (wins when the schema is listed before pg_catalog on the path);
--   * the signature with varchar or name where pg_catalog's takes text (an exact match for a
--     varchar column or a name value, which wins wherever the schema sits on the path).
-- Each copy records its call in its hits table (with the query that made it) and then does what
-- pg_catalog's would, so nothing else changes. Run as the hostile role, which owns the schema.
DO $plant$
DECLARE
    shadow text := '__SHADOW__';
    f record;
    o record;
    args text;
    variant text;
    n int := 0;
BEGIN
    EXECUTE pg_catalog.format('CREATE TABLE %I.hits (sig text, query text, role name DEFAULT current_user)', shadow);
    EXECUTE pg_catalog.format('GRANT INSERT, SELECT ON %I.hits TO PUBLIC', shadow);
    EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %I TO PUBLIC', shadow);
    FOR f IN
        SELECT p.oid, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid) AS args,
               pg_catalog.format_type(p.prorettype, NULL) AS result, p.pronargs,
               p.proargtypes::oid[] AS argtypes
        FROM pg_catalog.pg_proc p
        WHERE p.pronamespace = 'pg_catalog'::regnamespace
          AND p.prokind = 'f' AND NOT p.proretset
          AND p.proname IN ('md5', 'length', 'left', 'lower', 'upper', 'hashtext', 'hashtextextended',
                            'set_config', 'current_setting', 'pg_notify', 'pg_advisory_lock',
                            'pg_advisory_lock_shared', 'pg_advisory_unlock', 'pg_advisory_xact_lock',
                            'pg_advisory_xact_lock_shared', 'pg_try_advisory_lock',
                            'pg_try_advisory_lock_shared', 'pg_try_advisory_xact_lock',
                            'pg_try_advisory_xact_lock_shared', 'clock_timestamp', 'now',
                            'transaction_timestamp', 'statement_timestamp', 'isfinite',
                            'pg_backend_pid', 'current_database', 'pg_xact_status',
                            'pg_current_snapshot', 'pg_snapshot_xmax', 'format', 'concat',
                            'textcat', 'texteq', 'textlt', 'textle', 'textgt', 'textge', 'textne',
                            'jsonb_typeof', 'jsonb_build_object', 'to_jsonb', 'gen_random_uuid',
                            'pg_table_size', 'pg_indexes_size', 'pg_relation_size',
                            'pg_total_relation_size', 'pg_wal_lsn_diff', 'pg_current_wal_lsn',
                            'array_length', 'cardinality', 'int4', 'int8', 'text', 'position',
                            'substr', 'substring', 'strpos', 'octet_length', 'char_length')
          AND NOT EXISTS (SELECT 1 FROM pg_catalog.unnest(p.proargtypes::oid[]) t
                          JOIN pg_catalog.pg_type ty ON ty.oid = t WHERE ty.typtype = 'p')
          AND p.prorettype NOT IN ('trigger'::regtype, 'internal'::regtype)
    LOOP
        FOREACH variant IN ARRAY ARRAY['same', 'varchar', 'name'] LOOP
            IF variant = 'same' THEN
                args := f.args;
            ELSIF f.args ~ '\mtext\M' THEN
                args := pg_catalog.regexp_replace(f.args, '\mtext\M', CASE variant WHEN 'varchar' THEN 'character varying' ELSE 'name' END, 'g');
            ELSE
                CONTINUE;
            END IF;
            BEGIN
                EXECUTE pg_catalog.format(
                    'CREATE FUNCTION %I.%I(%s) RETURNS %s LANGUAGE plpgsql SET search_path = pg_catalog AS $f$'
                    || ' BEGIN INSERT INTO %I.hits(sig, query) VALUES (%L, pg_catalog.current_query());'
                    || ' %s pg_catalog.%I(%s); %s END $f$',
                    shadow, f.proname, args, f.result, shadow, f.proname || '(' || args || ')',
                    CASE WHEN f.result = 'void' THEN 'PERFORM' ELSE 'RETURN' END,
                    f.proname,
                    (SELECT pg_catalog.string_agg(pg_catalog.format('$%s::%s', i, pg_catalog.format_type(t, NULL)), ', ' ORDER BY i)
                     FROM pg_catalog.unnest(f.argtypes) WITH ORDINALITY AS a(t, i)),
                    CASE WHEN f.result = 'void' THEN 'RETURN;' ELSE '' END);
                n := n + 1;
            EXCEPTION WHEN duplicate_function THEN
                NULL; -- two pg_catalog overloads mapped to one variant
            END;
        END LOOP;
    END LOOP;
    FOR o IN
        SELECT op.oprname, pg_catalog.format_type(op.oprleft, NULL) AS l,
               pg_catalog.format_type(op.oprright, NULL) AS r,
               pg_catalog.format_type(op.oprresult, NULL) AS result
        FROM pg_catalog.pg_operator op
        WHERE op.oprnamespace = 'pg_catalog'::regnamespace
          AND op.oprname IN ('=', '<>', '<', '<=', '>', '>=', '||', '+', '-', '*', '&', '|', '>>', '<<', '~~')
          AND op.oprleft IN ('text'::regtype, 'int4'::regtype, 'int8'::regtype, 'timestamptz'::regtype,
                             'interval'::regtype, 'uuid'::regtype, 'bool'::regtype, 'jsonb'::regtype,
                             'name'::regtype, 'numeric'::regtype, 'float8'::regtype)
          AND op.oprright IN ('text'::regtype, 'int4'::regtype, 'int8'::regtype, 'timestamptz'::regtype,
                              'interval'::regtype, 'uuid'::regtype, 'bool'::regtype, 'jsonb'::regtype,
                              'name'::regtype, 'numeric'::regtype, 'float8'::regtype)
    LOOP
        FOREACH variant IN ARRAY ARRAY['same', 'varchar'] LOOP
            DECLARE
                l text := o.l;
                r text := o.r;
                fn text;
            BEGIN
                IF variant = 'varchar' THEN
                    IF o.l <> 'text' AND o.r <> 'text' THEN CONTINUE; END IF;
                    l := CASE WHEN o.l = 'text' THEN 'character varying' ELSE o.l END;
                    r := CASE WHEN o.r = 'text' THEN 'character varying' ELSE o.r END;
                END IF;
                n := n + 1;
                fn := 'op_' || n;
                EXECUTE pg_catalog.format(
                    'CREATE FUNCTION %I.%I(a %s, b %s) RETURNS %s LANGUAGE plpgsql SET search_path = pg_catalog AS $f$'
                    || ' BEGIN INSERT INTO %I.hits(sig, query) VALUES (%L, pg_catalog.current_query());'
                    || ' RETURN a::%s OPERATOR(pg_catalog.%s) b::%s; END $f$',
                    shadow, fn, l, r, o.result, shadow, o.oprname || '(' || l || ', ' || r || ')',
                    o.l, o.oprname, o.r);
                EXECUTE pg_catalog.format('CREATE OPERATOR %I.%s (FUNCTION = %I.%I, LEFTARG = %s, RIGHTARG = %s)',
                    shadow, o.oprname, shadow, fn, l, r);
            EXCEPTION WHEN duplicate_function OR duplicate_object THEN
                NULL;
            END;
        END LOOP;
    END LOOP;
    RAISE NOTICE 'planted % shadow functions and operators in %', n, shadow;
END
$plant$;
