package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.testing.DeliveryChecker;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * What PostgreSQL committed, read back from the outbox table at the end of a chaos run, and the
 * checker's deliveries judged against it.
 *
 * <p><b>Commit order.</b> Each event carries the id of the transaction that wrote it ({@code xid});
 * with {@code track_commit_timestamp} on, PostgreSQL knows when each committed, so the order the
 * writers committed in per aggregate is that of the commit timestamps (position breaks a tie). The
 * writer's default per-aggregate lock promises that this equals position order: {@link
 * Result#commitOrderMismatches} counts where it does not. Without commit timestamps (null), the
 * position order stands in.
 *
 * <p><b>Order.</b> First deliveries of an aggregate must come in commit order: a first delivery of
 * an event committed before one already delivered counts as {@code reordered}. Under {@link
 * DeadLetterPolicy#HOLD_AGGREGATE} that holds for every event, retried dead letters included (they
 * go out before their successors), and nothing committed after a dead letter that was never
 * delivered may be delivered ({@link Result#deliveredPastDeadLetter}). Under {@link
 * DeadLetterPolicy#RELEASE_AGGREGATE} a dead letter's successors go on without it, so an event that
 * was ever dead (dead at the end, or retried during the run) is left out of the order check: it may
 * arrive after its successors, or never; every other event must still arrive in commit order.
 *
 * <p><b>Accounting.</b> Every committed event is delivered (a retried dead letter that was
 * delivered counts as delivered), or dead (listed as a dead letter; with its reason in {@code
 * last_error}), or, under {@code HOLD_AGGREGATE} only, held: pending behind a dead event of its
 * aggregate, as that policy promises. Anything else is unaccounted: lost.
 */
final class CommitLedger {

  /** One committed event. {@code committedAt} in microseconds, null when not known. */
  record Row(
      String aggregate,
      int seq,
      long position,
      @Nullable Long committedAt,
      String eventType,
      boolean processed,
      boolean dead,
      @Nullable String lastError,
      int attempts,
      @Nullable String retryAfter) {

    Row(
        String aggregate,
        int seq,
        long position,
        @Nullable Long committedAt,
        String eventType,
        boolean processed,
        boolean dead,
        @Nullable String lastError) {
      this(aggregate, seq, position, committedAt, eventType, processed, dead, lastError, 0, null);
    }
  }

  /** The figures of one judgement. */
  record Result(
      long rows,
      long delivered,
      long deadLetters,
      long deadLettersWithReason,
      long deadLettersInjected,
      long held,
      long unaccounted,
      long pendingNotHeld,
      long reordered,
      long deliveredPastDeadLetter,
      long unexpected,
      @Nullable Long commitOrderMismatches,
      long retriedDelivered,
      long retriedDeadAgain,
      List<String> unaccountedSamples) {}

  private final Map<String, List<Row>> byAggregate;
  private final boolean commitOrderKnown;

  CommitLedger(List<Row> rows) {
    this.byAggregate = new HashMap<>();
    boolean known = true;
    for (Row row : rows) {
      byAggregate.computeIfAbsent(row.aggregate(), k -> new ArrayList<>()).add(row);
      known &= row.committedAt() != null;
    }
    this.commitOrderKnown = known;
    Comparator<Row> commitOrder =
        known
            ? Comparator.comparing((Row r) -> r.committedAt()).thenComparingLong(Row::position)
            : Comparator.comparingLong(Row::position);
    byAggregate.values().forEach(list -> list.sort(commitOrder));
  }

  /** Reads every event of the chaos run's aggregate type from {@code schema}'s outbox table. */
  static CommitLedger read(DataSource dataSource, String schema) throws SQLException {
    List<Row> rows = new ArrayList<>();
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement();
        ResultSet rs =
            statement.executeQuery(
                "select aggregate_id, (payload->>'seq')::int, position,"
                    + " (extract(epoch from pg_xact_commit_timestamp((payload->>'xid')::xid))"
                    + " * 1000000)::bigint,"
                    + " event_type, processed_at is not null, dead_at is not null, last_error,"
                    + " attempts, retry_after::text"
                    + " from "
                    + schema
                    + ".outbox_events where aggregate_type = '"
                    + Writers.AGGREGATE_TYPE
                    + "'")) {
      while (rs.next()) {
        long committedAt = rs.getLong(4);
        rows.add(
            new Row(
                rs.getString(1),
                rs.getInt(2),
                rs.getLong(3),
                rs.wasNull() ? null : committedAt,
                rs.getString(5),
                rs.getBoolean(6),
                rs.getBoolean(7),
                rs.getString(8),
                rs.getInt(9),
                rs.getString(10)));
      }
    }
    return new CommitLedger(rows);
  }

  /**
   * Judges the checker's deliveries under {@code policy}; {@code retried} holds the events the run
   * retried through {@code OutboxAdmin}, as {@code aggregate -> seqs}.
   */
  Result judge(
      DeliveryChecker checker, DeadLetterPolicy policy, Map<String, Set<Integer>> retried) {
    boolean hold = policy == DeadLetterPolicy.HOLD_AGGREGATE;
    long rows = 0;
    long delivered = 0;
    long dead = 0;
    long deadWithReason = 0;
    long deadInjected = 0;
    long held = 0;
    long unaccounted = 0;
    long pendingNotHeld = 0;
    long pastDead = 0;
    long retriedDelivered = 0;
    long retriedDeadAgain = 0;
    long mismatches = 0;
    List<String> samples = new ArrayList<>();
    for (Map.Entry<String, List<Row>> entry : byAggregate.entrySet()) {
      String aggregate = entry.getKey();
      Set<Integer> retriedHere = retried.getOrDefault(aggregate, Set.of());
      boolean deadBefore = false;
      boolean undeliveredDeadBefore = false;
      long lastPosition = Long.MIN_VALUE;
      for (Row row : entry.getValue()) {
        rows++;
        if (row.position() < lastPosition) {
          mismatches++;
        }
        lastPosition = Math.max(lastPosition, row.position());
        boolean isDelivered = checker.isDelivered(aggregate, row.seq());
        if (row.dead()) {
          dead++;
          if (row.lastError() != null && !row.lastError().isBlank()) {
            deadWithReason++;
          }
          if (row.lastError() != null && row.lastError().contains(PublisherFaults.MARK)) {
            deadInjected++;
          }
        }
        if (retriedHere.contains(row.seq())) {
          if (isDelivered) {
            retriedDelivered++;
          } else if (row.dead()) {
            retriedDeadAgain++;
          }
        }
        if (isDelivered) {
          delivered++;
          if (undeliveredDeadBefore) {
            pastDead++;
          }
        } else if (!row.dead()) {
          if (hold && deadBefore && !row.processed()) {
            held++;
          } else {
            unaccounted++;
            if (samples.size() < 10) {
              samples.add(
                  row
                      + " retried="
                      + retriedHere.contains(row.seq())
                      + " dead_before="
                      + deadBefore);
            }
            if (!row.processed()) {
              pendingNotHeld++;
            }
          }
        }
        deadBefore |= row.dead();
        undeliveredDeadBefore |= row.dead() && !isDelivered;
      }
    }
    long reordered = 0;
    long unexpected = 0;
    for (Map.Entry<String, int[]> entry : checker.firstDeliveryOrder().entrySet()) {
      List<Row> committed = byAggregate.getOrDefault(entry.getKey(), List.of());
      Map<Integer, Integer> rankOf = new HashMap<>();
      Set<Integer> exempt = new HashSet<>();
      for (int i = 0; i < committed.size(); i++) {
        Row row = committed.get(i);
        rankOf.put(row.seq(), i);
        if (!hold
            && (row.dead() || retried.getOrDefault(entry.getKey(), Set.of()).contains(row.seq()))) {
          exempt.add(row.seq());
        }
      }
      int highest = -1;
      for (int seq : entry.getValue()) {
        Integer rank = rankOf.get(seq);
        if (rank == null) {
          unexpected++;
          continue;
        }
        if (exempt.contains(seq)) {
          continue;
        }
        if (rank < highest) {
          reordered++;
        } else {
          highest = rank;
        }
      }
    }
    return new Result(
        rows,
        delivered,
        dead,
        deadWithReason,
        deadInjected,
        held,
        unaccounted,
        pendingNotHeld,
        reordered,
        pastDead,
        unexpected,
        commitOrderKnown ? mismatches : null,
        retriedDelivered,
        retriedDeadAgain,
        List.copyOf(samples));
  }
}
