package dev.pgoutbox.relay.internal;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.RelayConfig;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The relay's transaction settings, claim and completion statements for one batch, without a
 * publisher: what {@code ClaimProbe} runs. Not thread-safe (the claimer adapts between batches).
 */
public final class ProbeBatch {

  private final String schema;
  private final String applicationName;
  private final RelayConfig config;
  private final Claimer claimer;
  private final Marker marker;
  private List<Long> claimed = List.of();

  /** Statements for the outbox in {@code schema}, as a relay with {@code config} renders them. */
  public ProbeBatch(String schema, String name, RelayConfig config) {
    this.schema = schema;
    this.applicationName = Sql.applicationName(name);
    this.config = config;
    this.claimer =
        new Claimer(
            config.batchSize(),
            config.maxBatchBytes(),
            config.ordering(),
            config.deadLetterPolicy(),
            schema);
    this.marker = new Marker(config.completion(), schema);
  }

  /** Applies the claim transaction's settings and claims a batch; returns the rows claimed. */
  public int claim(Connection connection) {
    DSLContext tx = transaction(connection);
    Sql.configureClaimTransaction(
        tx, applicationName, config.publishTimeout(), config.synchronousCommit());
    List<ClaimedRow> rows = claimer.claim(tx);
    List<Long> positions = new ArrayList<>(rows.size());
    for (ClaimedRow row : rows) {
      positions.add(row.position());
    }
    claimed = positions;
    return positions.size();
  }

  /** Completes the rows of the last claim as published; returns the rows completed. */
  public int complete(Connection connection) {
    List<Long> positions = claimed;
    claimed = List.of();
    return marker.published(transaction(connection), positions);
  }

  private DSLContext transaction(Connection connection) {
    return DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema));
  }
}
