delete from "public"."outbox_events"
where (
  "public"."outbox_events"."position" in (
    select "pg_catalog"."unnest"(cast(
      ?
      as bigint[]
    ))
  )
  and "public"."outbox_events"."processed_at" is null
)
