select
  "e"."id",
  "e"."position",
  "e"."aggregate_type",
  "e"."aggregate_id",
  "e"."event_type",
  "e"."payload",
  "e"."headers",
  "e"."attempts",
  "e"."created_at",
  (
    "e"."dead_at" is null
    and (
      "e"."retry_after" is null
      or "e"."retry_after" <= cast(
        current_timestamp
        as timestamp with time zone
      )
    )
  ) as "due"
from "public"."outbox_events" as "e"
where (
  "e"."processed_at" is null
  and "e"."position" >= ?
  and "e"."dead_at" is null
  and (
    "e"."retry_after" is null
    or "e"."retry_after" <= cast(
      current_timestamp
      as timestamp with time zone
    )
  )
)
order by "e"."position"
fetch next ? rows only
for update of "e" skip locked
