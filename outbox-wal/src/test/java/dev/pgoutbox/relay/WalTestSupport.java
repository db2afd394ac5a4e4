package dev.pgoutbox.relay;

import static dev.pgoutbox.relay.testing.EventRows.event;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the WAL relay tests share: the writes they check delivery against, what they watch, and the
 * sessions they end or log in as.
 */
final class WalTestSupport {

  private WalTestSupport() {}

  /**
   * {@code seqs} events per aggregate {@code agg-<n>} of {@code aggregates} from {@code fromSeq}
   * on, one transaction each; returns each aggregate's last seq written.
   */
  static Map<String, Integer> write(TestSchema db, int aggregates, int fromSeq, int seqs) {
    return write(db, Outbox.builder().schema(db.schema()).build(), aggregates, fromSeq, seqs);
  }

  /** As {@link #write(TestSchema, int, int, int)}, through {@code outbox} (its transport). */
  static Map<String, Integer> write(
      TestSchema db, Outbox outbox, int aggregates, int fromSeq, int seqs) {
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

  /** Asserts that {@code payloads} hold every event of {@code written}, each aggregate in order. */
  static void assertNoneLostOrReordered(Map<String, Integer> written, List<String> payloads) {
    DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, payloads);
    assertThat(verdict.lost()).as("lost events").isZero();
    assertThat(verdict.reordered()).as("events out of order").isZero();
  }

  /** How many events of {@code db}'s outbox are not processed yet. */
  static long pending(TestSchema db) {
    return db.queryLong("select count(*) from outbox_events where processed_at is null");
  }

  /** Whether the replication slot {@code slot} exists. */
  static boolean slotExists(TestSchema db, String slot) {
    return db.queryLong(
            "select count(*) from pg_replication_slots where slot_name = '" + slot + "'")
        > 0;
  }

  /** Ends the session that streams {@code slot}, if any (a reader's connection lost). */
  static void terminateReader(TestSchema db, String slot) {
    db.execute(
        "select pg_terminate_backend(active_pid) from pg_replication_slots where slot_name = '"
            + slot
            + "' and active_pid is not null");
  }

  /** How many events of aggregates whose id starts with {@code prefix} {@code publisher} got. */
  static long delivered(RecordingPublisher publisher, String prefix) {
    return publisher.delivered().stream().filter(m -> m.aggregateId().startsWith(prefix)).count();
  }

  /** The test database's URL, logging in as {@code role} instead of the test's superuser. */
  static String urlAs(TestSchema db, String role, String password) {
    String url =
        db.jdbcUrl()
            .replaceAll("([?&])(user|password)=[^&]*", "$1")
            .replaceAll("&&+", "&")
            .replace("?&", "?");
    return url + (url.endsWith("&") ? "" : "&") + "user=" + role + "&password=" + password;
  }

  /** A listener that adds every {@link WalSlotStats} it hears to {@code heard}. */
  static RelayListener slotStatsInto(List<WalSlotStats> heard) {
    return new RelayListener() {
      @Override
      public void onWalSlot(WalSlotStats slot) {
        heard.add(slot);
      }
    };
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
