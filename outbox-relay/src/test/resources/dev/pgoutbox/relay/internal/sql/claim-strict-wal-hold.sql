with
  "heads"("t", "a", "p") as materialized (
    select "e"."aggregate_type", "e"."aggregate_id", "e"."position"
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
      and "e"."parked" = true
      and "e"."position" = (
        select min("p"."position")
        from "public"."outbox_events" as "p"
        where (
          "p"."processed_at" is null
          and "p"."aggregate_type" = "e"."aggregate_type"
          and "p"."aggregate_id" = "e"."aggregate_id"
        )
      )
    )
    order by "e"."position"
    fetch next ? rows only
    for update of "e" skip locked
  ),
  "owned"("t", "a", "p") as materialized (
    select
      "heads"."t",
      "heads"."a",
      "heads"."p"
    from "heads"
    where pg_try_advisory_xact_lock(
      ?,
      hashtext(("heads"."t" || ':' || "heads"."a"))
    )
  ),
  "chosen"("t", "a", "p", "rn") as materialized (
    select
      "owned"."t",
      "owned"."a",
      "x"."position",
      row_number() over (
        partition by
          "owned"."t",
          "owned"."a"
        order by "x"."position"
      ) as "rn"
    from "owned"
      cross join lateral (
        select "r"."position"
        from "public"."outbox_events" as "r"
        where (
          "r"."aggregate_type" = "owned"."t"
          and "r"."aggregate_id" = "owned"."a"
          and "r"."processed_at" is null
          and "r"."position" >= "owned"."p"
        )
        order by "r"."aggregate_type", "r"."aggregate_id", "r"."position"
        fetch next ? rows only
      ) as "x"
    order by
      "rn",
      "owned"."p"
    fetch next ? rows only
  )
select
  "c"."id",
  "c"."position",
  "c"."aggregate_type",
  "c"."aggregate_id",
  "c"."event_type",
  "c"."payload",
  "c"."headers",
  "c"."attempts",
  "c"."created_at",
  (
    "c"."dead_at" is null
    and (
      "c"."retry_after" is null
      or "c"."retry_after" <= cast(
        current_timestamp
        as timestamp with time zone
      )
    )
    and "c"."parked" = true
  ) as "due",
  "chosen"."rn"
from "chosen"
  join "public"."outbox_events" as "c"
    on (
      "c"."aggregate_type" = "chosen"."t"
      and "c"."aggregate_id" = "chosen"."a"
      and "c"."position" = "chosen"."p"
    )
where "c"."processed_at" is null
for update of "c"
