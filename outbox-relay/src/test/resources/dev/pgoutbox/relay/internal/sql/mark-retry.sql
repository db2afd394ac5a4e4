update "public"."outbox_events"
set
  "attempts" = ?,
  "last_error" = ?,
  "retry_after" = pg_catalog.clock_timestamp() + (? * interval '1 millisecond'),
  "dead_at" = null,
  "error_history" = pg_catalog.jsonb_path_query_array(coalesce("public"."outbox_events"."error_history", '[]'::pg_catalog.jsonb) OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('attempt', ?::pg_catalog.int4, 'at', pg_catalog.clock_timestamp(), 'error', ?::pg_catalog.text, 'dead', false)), '$[last - 9 to last]')
where (
  "public"."outbox_events"."id" = cast(? as uuid)
  and "public"."outbox_events"."processed_at" is null
)
