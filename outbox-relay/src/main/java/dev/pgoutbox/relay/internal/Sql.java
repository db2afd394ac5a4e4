package dev.pgoutbox.relay.internal;

import java.time.Duration;
import java.time.OffsetDateTime;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The few PostgreSQL expressions the generated jOOQ tables cannot express, in one place. Every
 * value is a bind variable; nothing is concatenated into SQL.
 */
public final class Sql {

  /** Names the session in {@code pg_stat_activity} for as long as it lasts. */
  static final String SET_APPLICATION_NAME = "SELECT set_config('application_name', ?, false)";

  private Sql() {}

  /**
   * The {@code application_name} of every session a relay uses (batches, LISTEN), so that {@code
   * pg_stat_activity} shows which relay holds what.
   */
  public static String applicationName(String relayName) {
    return "pgoutbox-relay-" + relayName;
  }

  /** The wall-clock time of the database, which moves within a transaction (unlike now()). */
  public static Field<OffsetDateTime> clockTimestamp() {
    return DSL.field("clock_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE);
  }

  /** {@code clock_timestamp() + delay}, in database time. */
  public static Field<OffsetDateTime> clockTimestampPlus(Duration delay) {
    return DSL.field(
        "clock_timestamp() + ({0} * interval '1 millisecond')",
        SQLDataType.TIMESTAMPWITHTIMEZONE, DSL.val(delay.toMillis()));
  }

  /**
   * Settings local to the relay's claim transaction, in one round trip:
   *
   * <ul>
   *   <li>{@code application_name}: the relay's name, so an operator finds the relay's batch
   *       sessions in {@code pg_stat_activity} although they come from the host's pool (restored to
   *       the pool's own name at commit);
   *   <li>{@code idle_in_transaction_session_timeout}: PostgreSQL ends the session when the
   *       transaction sits idle this long (e.g. a hung publish), releasing its row locks, so a
   *       stuck relay cannot hold events or vacuum back for long;
   *   <li>{@code lock_timeout}, the same: the claim waits for a row lock only when an admin
   *       statement holds one of its aggregate's rows, never longer than this;
   *   <li>{@code synchronous_commit = off} unless {@code synchronousCommit}: the commit returns
   *       before its WAL reaches disk. A database crash can then forget the last marks, and those
   *       events are published again (at least once, still in order: WAL is flushed in order), but
   *       no event is ever lost: events were committed durably by their writers.
   * </ul>
   */
  public static void configureClaimTransaction(
      DSLContext tx, String applicationName, Duration idleTimeout, boolean synchronousCommit) {
    tx.select(
            DSL.function(
                "set_config",
                SQLDataType.VARCHAR,
                DSL.val("application_name"),
                DSL.val(applicationName),
                DSL.val(true)),
            DSL.function(
                "set_config",
                SQLDataType.VARCHAR,
                DSL.val("idle_in_transaction_session_timeout"),
                DSL.val(Long.toString(idleTimeout.toMillis())),
                DSL.val(true)),
            DSL.function(
                "set_config",
                SQLDataType.VARCHAR,
                DSL.val("lock_timeout"),
                DSL.val(Long.toString(idleTimeout.toMillis())),
                DSL.val(true)),
            DSL.function(
                "set_config",
                SQLDataType.VARCHAR,
                DSL.val("synchronous_commit"),
                DSL.val(synchronousCommit ? "on" : "off"),
                DSL.val(true)))
        .fetch();
  }

  /**
   * The first key of the relays' aggregate locks for the outbox in {@code schema}: a fixed hash of
   * the schema name (String.hashCode is specified), so every relay of one outbox agrees on it.
   * Aggregate locks use the two-key advisory lock space, apart from the writers' one-key locks
   * ({@code serializeWritersPerAggregate}), so a relay never blocks a writer.
   */
  public static int aggregateLockNamespace(String schema) {
    return ("pgoutbox.relay:" + schema).hashCode();
  }

  /**
   * {@code pg_try_advisory_xact_lock(namespace, hashtext(type || ':' || id))}: takes the
   * aggregate's lock until the transaction ends, or answers false at once if another transaction
   * holds it. Two aggregates whose hashes collide only keep each other waiting for a batch.
   */
  public static Condition tryLockAggregate(
      int namespace, Field<String> aggregateType, Field<String> aggregateId) {
    Field<Integer> key =
        DSL.function(
            "hashtext", SQLDataType.INTEGER, aggregateType.concat(DSL.inline(":"), aggregateId));
    return DSL.condition(
        DSL.function("pg_try_advisory_xact_lock", SQLDataType.BOOLEAN, DSL.val(namespace), key));
  }

  /** {@code LISTEN "channel"}; the channel is a validated identifier (see OutboxSchema). */
  public static String listen(String channel) {
    return "LISTEN " + DSL.quotedName(channel);
  }
}
