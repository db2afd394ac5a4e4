with
  "claimed"("position") as materialized (
    select "e"."position"
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
  )
update "public"."outbox_events" as "u"
set
  "processed_at" = clock_timestamp()
from "claimed"
where (
  "u"."position" = "claimed"."position"
  and "u"."processed_at" is null
)
returning 
  "u"."id",
  "u"."position",
  "u"."aggregate_type",
  "u"."aggregate_id",
  "u"."event_type",
  "u"."payload",
  "u"."headers",
  "u"."attempts",
  "u"."created_at",
  true as "due"
