update "public"."outbox_events"
set
  "attempts" = ?,
  "last_error" = ?,
  "retry_after" = null,
  "dead_at" = pg_catalog.clock_timestamp()
where (
  "public"."outbox_events"."id" = cast(? as uuid)
  and "public"."outbox_events"."processed_at" is null
)
