package dev.pgoutbox.tools.bench;

import dev.pgoutbox.core.OutboxTransport;
import java.util.HashMap;
import java.util.Map;

/**
 * The bench's preload for {@code --transport messages}: the same events as {@link
 * BenchDatabase#preload(int, int)} (aggregates, seqs, payloads), each as the message {@code Outbox}
 * would emit, in one transaction, built on the server (the layout of {@code
 * dev.pgoutbox.core.internal.EventMessages}, version 1).
 */
final class MessagePreload {

  private MessagePreload() {}

  static Map<String, Integer> preload(BenchDatabase db, int events, int aggregates)
      throws Exception {
    String aggregate = "'agg-' || (i % " + aggregates + ")";
    String payload =
        "jsonb_build_object('aggregate', "
            + aggregate
            + ", 'seq', i / "
            + aggregates
            + " + 1)::text";
    db.execute(
        "SELECT count(pg_catalog.pg_logical_emit_message(true, '"
            + OutboxTransport.messagePrefix(db.schema())
            + "', pg_catalog.byteacat(pg_catalog.timestamptz_send(now()), '\\x01'::bytea"
            + " || uuid_send(gen_random_uuid())"
            + field("'order'")
            + field(aggregate)
            + field("'order.step'")
            + field(payload)
            + field("'{}'")
            + "))) FROM (SELECT i FROM generate_series(0, "
            + (events - 1)
            + ") AS i ORDER BY i) AS s");
    db.checkpoint();
    Map<String, Integer> written = new HashMap<>();
    for (int i = 0; i < Math.min(events, aggregates); i++) {
      written.put("agg-" + i, events / aggregates + (i < events % aggregates ? 1 : 0));
    }
    return written;
  }

  /** {@code || int4send(octet_length(t)) || convert_to(t, 'UTF8')}. */
  private static String field(String text) {
    return " || int4send(octet_length(" + text + ")) || convert_to(" + text + ", 'UTF8')";
  }
}
