select "e"."id", "e"."payload", "e"."headers"
from "public"."outbox_events" as "e"
where "e"."id" = any (
  cast(
    ?
    as uuid[]
  )
)
