update "public"."outbox_events"
set
  "attempts" = ?,
  "last_error" = ?,
  "retry_after" = null,
  "dead_at" = clock_timestamp(),
  "processed_at" = null
where "public"."outbox_events"."id" = cast(? as uuid)
