update "public"."outbox_events"
set
  "attempts" = ?,
  "last_error" = ?,
  "retry_after" = clock_timestamp() + (? * interval '1 millisecond'),
  "dead_at" = null,
  "processed_at" = null
where "public"."outbox_events"."id" = cast(? as uuid)
