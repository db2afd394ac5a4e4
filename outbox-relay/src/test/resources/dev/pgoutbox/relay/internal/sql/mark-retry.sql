update "public"."outbox_events"
set
  "attempts" = ?,
  "last_error" = ?,
  "retry_after" = pg_catalog.clock_timestamp() + (? * interval '1 millisecond'),
  "dead_at" = null
where (
  "public"."outbox_events"."id" = cast(? as uuid)
  and "public"."outbox_events"."processed_at" is null
)
