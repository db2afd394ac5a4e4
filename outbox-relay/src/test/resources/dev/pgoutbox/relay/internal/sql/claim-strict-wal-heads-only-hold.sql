with
  "heads" as materialized (
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
        and "e"."parked" = true
        and "e"."commit_lsn" is not null
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
      and "e"."parked" = true
      and "e"."commit_lsn" is not null
      and case
        when "pg_catalog"."pg_try_advisory_lock"(
          -1801522516,
          "pg_catalog"."hashtext"(("e"."aggregate_type" || ':' || "e"."aggregate_id"))
        ) then "pg_catalog"."pg_advisory_unlock"(
          -1801522516,
          "pg_catalog"."hashtext"(("e"."aggregate_type" || ':' || "e"."aggregate_id"))
        )
        else false
      end
      and case
        when (
          select 1
          from "public"."outbox_events" as "b"
          where (
            "b"."processed_at" is null
            and "b"."parked" = true
            and "b"."aggregate_type" = "e"."aggregate_type"
            and "b"."aggregate_id" = "e"."aggregate_id"
            and ("b"."commit_lsn", "b"."position") < ("e"."commit_lsn", "e"."position")
          )
          order by "b"."aggregate_type" desc, "b"."aggregate_id" desc, "b"."commit_lsn" desc, "b"."position" desc
          fetch next 1 rows only
        ) is null then ((
          select 1
          from "public"."outbox_events" as "p"
          where (
            "p"."processed_at" is null
            and "p"."aggregate_type" = "e"."aggregate_type"
            and "p"."aggregate_id" >= "e"."aggregate_id"
            and ("p"."aggregate_id", "p"."position") < ("e"."aggregate_id", "e"."position")
            and not (
              "p"."parked" = true
              and "p"."commit_lsn" is not null
            )
          )
          order by "p"."aggregate_type" desc, "p"."aggregate_id" desc, "p"."position" desc
          fetch next 1 rows only
        ) is null)
        else false
      end
    )
    order by "e"."position"
    fetch next ? rows only
    for update of "e" skip locked
  )
select
  "heads"."id",
  "heads"."position",
  "heads"."aggregate_type",
  "heads"."aggregate_id",
  "heads"."event_type",
  "heads"."payload",
  "heads"."headers",
  "heads"."attempts",
  "heads"."created_at",
  "heads"."due",
  "heads"."body_bytes",
  1 as "rn",
  (
    select count(*)
    from "heads"
  ) as "heads_searched"
from "heads"
where "pg_catalog"."pg_try_advisory_xact_lock"(
  ?,
  "pg_catalog"."hashtext"(("heads"."aggregate_type" || ':' || "heads"."aggregate_id"))
)
