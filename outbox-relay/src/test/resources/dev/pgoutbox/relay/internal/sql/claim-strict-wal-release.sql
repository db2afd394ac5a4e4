with
  "heads"("t", "a", "p", "l") as materialized (
    select "e"."aggregate_type", "e"."aggregate_id", "e"."position", "e"."commit_lsn"
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
            and "b"."dead_at" is null
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
            and "p"."dead_at" is null
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
  ),
  "owned"("t", "a", "p", "l") as materialized (
    select
      "heads"."t",
      "heads"."a",
      "heads"."p",
      "heads"."l"
    from "heads"
    where "pg_catalog"."pg_try_advisory_xact_lock"(
      ?,
      "pg_catalog"."hashtext"(("heads"."t" || ':' || "heads"."a"))
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
        order by "x"."commit_lsn", "x"."position"
      ) as "rn"
    from "owned"
      cross join lateral (
        select "r"."aggregate_type", "r"."aggregate_id", "r"."position", "r"."commit_lsn"
        from "public"."outbox_events" as "r"
        where (
          "r"."processed_at" is null
          and "r"."parked" = true
          and "r"."aggregate_type" = "owned"."t"
          and "r"."aggregate_id" = "owned"."a"
          and ("r"."commit_lsn", "r"."position") >= (
            "owned"."l",
            "owned"."p"
          )
          and "r"."dead_at" is null
        )
        order by "r"."aggregate_type", "r"."aggregate_id", "r"."commit_lsn", "r"."position"
        fetch next ? rows only
      ) as "x"
    where (
      "x"."aggregate_type" = "owned"."t"
      and "x"."aggregate_id" = "owned"."a"
    )
    order by
      "rn",
      "owned"."p"
    fetch next ? rows only
  )
select
  "k"."id",
  "k"."position",
  "k"."aggregate_type",
  "k"."aggregate_id",
  "k"."event_type",
  "k"."payload",
  "k"."headers",
  "k"."attempts",
  "k"."created_at",
  "k"."due",
  "k"."body_bytes",
  "chosen"."rn",
  (
    select count(*)
    from "heads"
  ) as "heads_searched"
from "chosen"
  cross join lateral (
    select
      "c"."id",
      "c"."position",
      "c"."aggregate_type",
      "c"."aggregate_id",
      "c"."event_type",
      case
        when (
          ("pg_catalog"."pg_column_size"("c"."payload") + "pg_catalog"."pg_column_size"("c"."headers")) <= 83886
          and "pg_catalog"."pg_column_compression"("c"."payload") is null
          and "pg_catalog"."pg_column_compression"("c"."headers") is null
        ) then "c"."payload"
      end as "payload",
      case
        when (
          ("pg_catalog"."pg_column_size"("c"."payload") + "pg_catalog"."pg_column_size"("c"."headers")) <= 83886
          and "pg_catalog"."pg_column_compression"("c"."payload") is null
          and "pg_catalog"."pg_column_compression"("c"."headers") is null
        ) then "c"."headers"
      end as "headers",
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
        and "c"."commit_lsn" is not null
      ) as "due",
      case
        when (
          ("pg_catalog"."pg_column_size"("c"."payload") + "pg_catalog"."pg_column_size"("c"."headers")) <= 83886
          and "pg_catalog"."pg_column_compression"("c"."payload") is null
          and "pg_catalog"."pg_column_compression"("c"."headers") is null
        ) then null
        else (cast(
          "pg_catalog"."octet_length"(cast("c"."payload" as text))
          as bigint
        ) + cast(
          "pg_catalog"."octet_length"(cast("c"."headers" as text))
          as bigint
        ))
      end as "body_bytes"
    from "public"."outbox_events" as "c"
    where (
      "c"."position" = "chosen"."p"
      and "c"."aggregate_type" = "chosen"."t"
      and "c"."aggregate_id" = "chosen"."a"
      and "c"."processed_at" is null
    )
    for update
  ) as "k"
