package dev.pgoutbox.relay.internal;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;

/** Keeps a claim's rows within the batch's byte budget and reads the bodies the claim left out. */
final class ByteBudget {

  private final int maxBatchBytes;

  /** Reads the payload and headers of the claimed rows the claim left out for their size. */
  private final RenderedStatement bodiesStatement;

  /** A budget of {@code maxBatchBytes} for claims of the outbox in {@code schema}. */
  ByteBudget(int maxBatchBytes, String schema) {
    this.maxBatchBytes = maxBatchBytes;
    this.bodiesStatement = ClaimStatements.bodies(schema);
  }

  /**
   * The rows of {@code candidates} (in the order the budget deals them out) whose payloads and
   * headers fit in {@link #maxBatchBytes} together, the first always (an event larger than the
   * budget goes out alone), then read the payloads and headers the claim left out. Under strict
   * ordering a row that does not fit ends its aggregate's run, so each aggregate keeps a prefix of
   * its run; rows left are locked until commit, and claimed again by the next batch.
   */
  List<ClaimedRow> withinBudget(DSLContext tx, List<SizedRow> candidates, boolean strict) {
    long total = 0;
    boolean anyLeftOut = false;
    for (SizedRow candidate : candidates) {
      total += candidate.bytes();
      anyLeftOut |= candidate.bodyLeftOut();
    }
    if (total <= maxBatchBytes && !anyLeftOut) {
      List<ClaimedRow> rows = new ArrayList<>(candidates.size());
      for (SizedRow candidate : candidates) {
        rows.add(candidate.row());
      }
      return rows;
    }
    List<SizedRow> kept = new ArrayList<>(candidates.size());
    java.util.Set<ClaimedRow.AggregateKey> ended = new java.util.HashSet<>();
    long used = 0;
    for (SizedRow candidate : candidates) {
      if (strict && !ended.isEmpty() && ended.contains(candidate.row().aggregate())) {
        continue;
      }
      if (!kept.isEmpty() && used + candidate.bytes() > maxBatchBytes) {
        if (strict) {
          ended.add(candidate.row().aggregate());
        }
        continue;
      }
      kept.add(candidate);
      used += candidate.bytes();
    }
    java.util.Map<UUID, String[]> bodies = readBodies(tx, kept);
    List<ClaimedRow> rows = new ArrayList<>(kept.size());
    for (SizedRow candidate : kept) {
      ClaimedRow row = candidate.row();
      if (candidate.bodyLeftOut()) {
        String[] body = bodies.get(row.id());
        if (body == null) {
          throw new IllegalStateException("claimed row " + row.id() + " was not found again");
        }
        row = row.withBody(body[0], body[1]);
      }
      rows.add(row);
    }
    return rows;
  }

  /** The payloads and headers of the rows of {@code kept} that the claim left out, by id. */
  private java.util.Map<UUID, String[]> readBodies(DSLContext tx, List<SizedRow> kept) {
    List<UUID> ids = new ArrayList<>();
    for (SizedRow candidate : kept) {
      if (candidate.bodyLeftOut()) {
        ids.add(candidate.row().id());
      }
    }
    java.util.Map<UUID, String[]> bodies = new java.util.HashMap<>();
    if (ids.isEmpty()) {
      return bodies;
    }
    tx.connection(
        connection -> {
          try (PreparedStatement ps = connection.prepareStatement(bodiesStatement.sql())) {
            ps.setArray(
                ClaimStatements.BODIES_IDS, connection.createArrayOf("uuid", ids.toArray()));
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                bodies.put(
                    rs.getObject(1, UUID.class), new String[] {rs.getString(2), rs.getString(3)});
              }
            }
          } catch (SQLException e) {
            throw new DataAccessException(
                "reading large claimed events failed: " + e.getMessage(), e);
          }
        });
    return bodies;
  }
}
