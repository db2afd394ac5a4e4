package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.testing.EventRows.event;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What the WAL hazard tests share: the writes they check delivery against, and what they watch. */
final class WalTestSupport {

  private WalTestSupport() {}

  /**
   * {@code seqs} events per aggregate {@code agg-<n>} of {@code aggregates} from {@code fromSeq}
   * on, one transaction each; returns each aggregate's last seq written.
   */
  static Map<String, Integer> write(TestSchema db, int aggregates, int fromSeq, int seqs) {
    Outbox outbox = Outbox.builder().schema(db.schema()).build();
    Map<String, Integer> written = new HashMap<>();
    for (int seq = fromSeq; seq < fromSeq + seqs; seq++) {
      List<OutboxEvent> events = new ArrayList<>();
      for (int a = 0; a < aggregates; a++) {
        events.add(event("agg-" + a, seq));
        written.put("agg-" + a, seq);
      }
      db.dsl().transaction(tx -> outbox.appendAll(tx.dsl(), events));
    }
    return written;
  }

  /** How many events of {@code db}'s outbox are not processed yet. */
  static long pending(TestSchema db) {
    return db.queryLong("select count(*) from outbox_events where processed_at is null");
  }

  /** A listener that adds the reason of every fall-back to the table to {@code reasons}. */
  static RelayListener fallBacksInto(List<String> reasons) {
    return new RelayListener() {
      @Override
      public void onWalFallBack(String slotName, String reason) {
        reasons.add(reason);
      }
    };
  }
}
