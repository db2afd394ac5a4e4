package dev.pgoutbox.relay.internal;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.exception.DataAccessException;

/** Runs a rendered claim through JDBC and reads its rows by column index. */
final class ClaimReads {

  private ClaimReads() {}

  /** Sets the binds of the claim statement. */
  interface Binder {
    void bind(PreparedStatement statement) throws SQLException;
  }

  /** Receives each claimed row, with the result set positioned on it for extra columns. */
  interface RowSink {
    void accept(ClaimedRow row, ResultSet rs) throws SQLException;
  }

  /**
   * Runs {@code claim} on {@code tx}'s connection with the binds {@code binder} sets, and reads
   * each row by column index ({@link ClaimStatements#ID} on) with JDBC getters: no per-value
   * converter lookup, and payload and headers stay the text PostgreSQL sent.
   */
  static void read(DSLContext tx, RenderedStatement claim, Binder binder, RowSink sink) {
    tx.connection(
        connection -> {
          try (PreparedStatement ps = connection.prepareStatement(claim.sql())) {
            binder.bind(ps);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                String payload = rs.getString(ClaimStatements.PAYLOAD);
                int attempts = rs.getInt(ClaimStatements.ATTEMPTS);
                sink.accept(
                    new ClaimedRow(
                        rs.getObject(ClaimStatements.ID, UUID.class),
                        rs.getLong(ClaimStatements.POSITION),
                        rs.getString(ClaimStatements.AGGREGATE_TYPE),
                        rs.getString(ClaimStatements.AGGREGATE_ID),
                        rs.getString(ClaimStatements.EVENT_TYPE),
                        payload == null ? "null" : payload,
                        rs.getString(ClaimStatements.HEADERS),
                        attempts,
                        rs.getObject(ClaimStatements.CREATED_AT, OffsetDateTime.class),
                        rs.getBoolean(ClaimStatements.DUE)),
                    rs);
              }
            }
          } catch (SQLException e) {
            throw new DataAccessException("claim failed: " + e.getMessage(), e);
          }
        });
  }
}
