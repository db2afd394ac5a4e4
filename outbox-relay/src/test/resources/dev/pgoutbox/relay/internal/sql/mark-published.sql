update "public"."outbox_events"
set
  "processed_at" = pg_catalog.clock_timestamp()
where (
  "public"."outbox_events"."position" in (
    select "pg_catalog"."unnest"(cast(
      ?
      as bigint[]
    ))
  )
  and "public"."outbox_events"."processed_at" is null
)
