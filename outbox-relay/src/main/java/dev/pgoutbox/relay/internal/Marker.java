package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.Completion;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;

/**
 * Records the outcome of a batch inside the claim transaction, with statements built from the
 * generated tables and rendered once ({@link MarkStatements}), run through JDBC.
 *
 * <p>Only the connection of the {@code tx} passed in is used: the statements name the tables of the
 * schema this marker was made for.
 */
public final class Marker {

  private final RenderedStatement published;
  private final RenderedStatement retry;
  private final RenderedStatement dead;

  /** A marker for the outbox in {@code schema} that completes published events as told. */
  public Marker(Completion completion, String schema) {
    this.published =
        completion == Completion.DELETE
            ? MarkStatements.deleted(schema)
            : MarkStatements.published(schema);
    this.retry = MarkStatements.retry(schema);
    this.dead = MarkStatements.dead(schema);
  }

  /**
   * Marks (or deletes) every published event in one statement. Rows are found by {@code position}
   * through the pending index, whose neighbouring entries share pages, rather than by random ids.
   * Only rows still unprocessed are touched; the claim locked them, so all of them should be.
   *
   * @return rows marked; fewer than {@code positions} means some were no longer this relay's
   */
  public int published(DSLContext tx, List<Long> positions) {
    if (positions.isEmpty()) {
      return 0;
    }
    return tx.connectionResult(
        connection -> {
          try (PreparedStatement statement = MarkStatements.prepare(connection, published)) {
            Array array = connection.createArrayOf("int8", positions.toArray(Long[]::new));
            try {
              statement.setArray(MarkStatements.PUBLISHED_POSITIONS, array);
              return statement.executeUpdate();
            } finally {
              array.free();
            }
          } catch (SQLException e) {
            throw new DataAccessException("marking published events failed: " + e.getMessage(), e);
          }
        });
  }

  /**
   * Records failed attempts: backoff into {@code retry_after}, or {@code dead_at}; only on rows
   * still unprocessed. Retries and dead letters go as one JDBC batch each.
   *
   * @return rows recorded; fewer than {@code failures} means some were no longer this relay's
   */
  public int failed(DSLContext tx, List<Failure> failures) {
    if (failures.isEmpty()) {
      return 0;
    }
    return tx.connectionResult(
        connection -> {
          try {
            return record(connection, retry, failures, false)
                + record(connection, dead, failures, true);
          } catch (SQLException e) {
            throw new DataAccessException("recording failures failed: " + e.getMessage(), e);
          }
        });
  }

  /** Runs {@code statement} for the failures whose {@code dead()} is {@code dead}. */
  private static int record(
      Connection connection, RenderedStatement statement, List<Failure> failures, boolean dead)
      throws SQLException {
    List<Failure> these = failures.stream().filter(f -> f.dead() == dead).toList();
    if (these.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps = connection.prepareStatement(statement.sql())) {
      for (Failure f : these) {
        ps.setInt(MarkStatements.FAILED_ATTEMPTS, f.attempts());
        ps.setString(MarkStatements.FAILED_REASON, f.reason());
        if (dead) {
          ps.setInt(MarkStatements.DEAD_HISTORY_ATTEMPT, f.attempts());
          ps.setString(MarkStatements.DEAD_HISTORY_REASON, f.reason());
          ps.setObject(MarkStatements.DEAD_ID, f.id());
        } else {
          ps.setLong(MarkStatements.RETRY_IN_MILLIS, f.retryIn().toMillis());
          ps.setInt(MarkStatements.RETRY_HISTORY_ATTEMPT, f.attempts());
          ps.setString(MarkStatements.RETRY_HISTORY_REASON, f.reason());
          ps.setObject(MarkStatements.RETRY_ID, f.id());
        }
        if (these.size() == 1) {
          return ps.executeUpdate();
        }
        ps.addBatch();
      }
      int recorded = 0;
      for (int count : ps.executeBatch()) {
        recorded += Math.max(0, count);
      }
      return recorded;
    }
  }

  /**
   * One failed attempt to record.
   *
   * @param id the event
   * @param attempts failed attempts including this one
   * @param reason truncated reason for {@code last_error}
   * @param dead whether to dead-letter it
   * @param retryIn backoff before the next attempt (ignored when dead)
   */
  public record Failure(UUID id, int attempts, String reason, boolean dead, Duration retryIn) {}
}
