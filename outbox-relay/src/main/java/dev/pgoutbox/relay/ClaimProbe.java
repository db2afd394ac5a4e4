package dev.pgoutbox.relay;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.ProbeBatch;
import java.sql.Connection;
import java.sql.SQLException;

/**
 * A capacity probe for operators: runs the relay's own claim and completion statements for one
 * batch, on a connection the caller owns, without publishing anything. It answers "how fast can
 * PostgreSQL hand out and complete batches of this outbox, with this configuration, on this
 * machine?" with no broker and no Java-side work in the way: the ceiling the relay's throughput is
 * measured against ({@code pgoutbox-tools bench ceiling}), and the claim's cost as history grows
 * ({@code bench history}).
 *
 * <pre>{@code
 * ClaimProbe probe =
 *     ClaimProbe.builder()
 *         .schema("outbox")
 *         .config(RelayConfig.builder().batchSize(200).build())
 *         .build();
 * try (Connection connection = dataSource.getConnection()) {
 *   connection.setAutoCommit(false);
 *   int claimed = probe.claim(connection);      // locks up to 200 due events, as a relay would
 *   int completed = probe.complete(connection); // marks them published (or deletes them)
 *   connection.rollback();                      // or commit(): see below
 * }
 * }</pre>
 *
 * <p>The statements are the relay's, rendered for {@link RelayConfig#ordering()}, {@link
 * RelayConfig#deadLetterPolicy()}, {@link RelayConfig#completion()} and {@link
 * RelayConfig#batchSize()}; the transaction gets the relay's settings ({@code application_name},
 * timeouts, {@code synchronous_commit}). <b>Committing a completed batch loses those events</b>:
 * nothing was published. Run it on a copy of the data, as the benchmark does, or roll back.
 *
 * <p>Not thread-safe: one probe per connection and thread, like a relay's batch loop (the claim
 * adapts how many aggregates it asks for from one batch to the next).
 */
public final class ClaimProbe {

  private final ProbeBatch batch;

  private ClaimProbe(Builder b) {
    this.batch = new ProbeBatch(b.schema, b.name, b.config);
  }

  /** A builder; every setting has a default. */
  public static Builder builder() {
    return new Builder();
  }

  /**
   * In {@code connection}'s current transaction (auto-commit must be off), applies the relay's
   * transaction settings and claims one batch of due events with the relay's claim statement. The
   * rows stay locked until the caller commits or rolls back.
   *
   * @return the number of events claimed (0 when none is due)
   * @throws IllegalStateException if {@code connection} is in auto-commit mode
   * @throws org.jooq.exception.DataAccessException if a statement fails
   */
  public int claim(Connection connection) {
    return batch.claim(inTransaction(connection));
  }

  /**
   * Completes the events of the last {@link #claim} as published (marks them, or deletes them under
   * {@link Completion#DELETE}) with the relay's completion statement, in {@code connection}'s
   * current transaction. Nothing is published.
   *
   * @return the number of events completed
   * @throws IllegalStateException if {@code connection} is in auto-commit mode
   * @throws org.jooq.exception.DataAccessException if the statement fails
   */
  public int complete(Connection connection) {
    return batch.complete(inTransaction(connection));
  }

  private static Connection inTransaction(Connection connection) {
    requireNonNull(connection, "connection must not be null");
    try {
      if (connection.getAutoCommit()) {
        throw new IllegalStateException(
            "connection must not be in auto-commit mode: a claim holds its locks until the"
                + " caller's transaction ends");
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot read the connection's auto-commit mode", e);
    }
    return connection;
  }

  /** Builder of {@link ClaimProbe}; not thread-safe. */
  public static final class Builder {
    private String schema = OutboxSchema.DEFAULT_SCHEMA;
    private String name = "probe";
    private RelayConfig config = RelayConfig.ofDefaults();

    private Builder() {}

    /** The schema holding the outbox tables (default {@code public}). */
    public Builder schema(String schema) {
      this.schema = OutboxSchema.requireValidName(schema);
      return this;
    }

    /**
     * The name in {@code application_name} ({@code pgoutbox-relay-<name>}), as a relay's (default
     * {@code probe}); the same rules as {@link OutboxRelay.Builder#name}.
     */
    public Builder name(String name) {
      this.name = OutboxRelay.requireValidName(name);
      return this;
    }

    /** The relay settings whose statements to run (default {@link RelayConfig#ofDefaults()}). */
    public Builder config(RelayConfig config) {
      this.config = requireNonNull(config, "config must not be null");
      return this;
    }

    /** The probe. */
    public ClaimProbe build() {
      return new ClaimProbe(this);
    }
  }
}
