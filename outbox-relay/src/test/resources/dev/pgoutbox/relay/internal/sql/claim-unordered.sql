select
  "e"."id",
  "e"."position",
  "e"."aggregate_type",
  "e"."aggregate_id",
  "e"."event_type",
  case
    when (
      ("pg_catalog"."pg_column_size"("e"."payload") + "pg_catalog"."pg_column_size"("e"."headers")) <= 83886
      and "pg_catalog"."pg_column_compression"("e"."payload") is null
      and "pg_catalog"."pg_column_compression"("e"."headers") is null
    ) then "e"."payload"
  end as "payload",
  case
    when (
      ("pg_catalog"."pg_column_size"("e"."payload") + "pg_catalog"."pg_column_size"("e"."headers")) <= 83886
      and "pg_catalog"."pg_column_compression"("e"."payload") is null
      and "pg_catalog"."pg_column_compression"("e"."headers") is null
    ) then "e"."headers"
  end as "headers",
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
  ) as "due",
  case
    when (
      ("pg_catalog"."pg_column_size"("e"."payload") + "pg_catalog"."pg_column_size"("e"."headers")) <= 83886
      and "pg_catalog"."pg_column_compression"("e"."payload") is null
      and "pg_catalog"."pg_column_compression"("e"."headers") is null
    ) then null
    else (cast(
      "pg_catalog"."octet_length"(cast("e"."payload" as text))
      as bigint
    ) + cast(
      "pg_catalog"."octet_length"(cast("e"."headers" as text))
      as bigint
    ))
  end as "body_bytes"
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
