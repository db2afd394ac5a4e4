package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_RELAYS;

import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.db.jooq.tables.records.OutboxRelaysRecord;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.relay.Ordering;
import java.time.Duration;
import java.util.UUID;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.conf.Settings;
import org.jooq.exception.DataAccessException;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The relay's entry in {@code outbox_relays}: relays on one outbox must agree on ordering and
 * dead-letter policy (one {@code UNORDERED} or {@code RELEASE_AGGREGATE} relay among strict ones
 * breaks the order for all) and on their source (a table relay beside a WAL relay, or WAL relays on
 * two slots, publish the same events twice), so a relay refuses to start when a live relay's
 * settings differ. Registrations are serialized by a transaction-level advisory lock; a relay
 * refreshes its heartbeat while it runs and deletes its row when it stops, and a row whose
 * heartbeat is older than {@link #EXPIRES_AFTER} (a crashed relay) is removed by the next
 * registration.
 */
public final class FleetRegistry {

  /** How often a running relay refreshes its heartbeat. */
  public static final Duration HEARTBEAT_EVERY = Duration.ofSeconds(5);

  /** A registration whose heartbeat is older than this no longer counts (the relay crashed). */
  public static final Duration EXPIRES_AFTER = Duration.ofSeconds(30);

  /** The source of an {@code OutboxRelay}: it claims the table's pending rows. */
  public static final String TABLE_SOURCE = "TABLE";

  private static final String WAL_SOURCE_PREFIX = "WAL:";

  private final DSLContext dsl;
  private final String relayName;
  private final String schema;
  private final Ordering ordering;
  private final DeadLetterPolicy deadLetterPolicy;
  private final String source;
  private final UUID instance = UUID.randomUUID();

  /**
   * The registry entry of one relay instance.
   *
   * @param source {@link #TABLE_SOURCE} or {@link #walSource}
   */
  public FleetRegistry(
      DataSource dataSource,
      Settings settings,
      String schema,
      String relayName,
      Ordering ordering,
      DeadLetterPolicy deadLetterPolicy,
      String source) {
    this.dsl = DSL.using(SearchPath.pinned(dataSource), SQLDialect.POSTGRES, settings);
    this.schema = schema;
    this.relayName = relayName;
    this.ordering = ordering;
    this.deadLetterPolicy = deadLetterPolicy;
    this.source = source;
  }

  /** The source of a {@code WalRelay} reading {@code slotName}. */
  public static String walSource(String slotName) {
    return WAL_SOURCE_PREFIX + slotName;
  }

  /**
   * Adds this relay's row, unless a live relay on the outbox uses other settings.
   *
   * @throws OutboxException naming the conflicting setting and relay, or the migration to run when
   *     the registry table or one of its columns is missing
   * @throws org.jooq.exception.DataAccessException when the database cannot be reached
   */
  public void register() {
    try {
      insertUnlessConflicting();
    } catch (DataAccessException e) {
      if ("42P01".equals(e.sqlState()) || "42703".equals(e.sqlState())) {
        throw new OutboxException(
            "pgoutbox-relay["
                + relayName
                + "] - "
                + schema
                + ".outbox_relays is missing or lacks a column ("
                + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage())
                + "): run OutboxSchema.migrate(dataSource, \""
                + schema
                + "\") to apply migrations V3 and V8",
            e);
      }
      throw e;
    }
  }

  private void insertUnlessConflicting() {
    dsl.transaction(
        configuration -> {
          DSLContext tx = configuration.dsl();
          // A registration cut off by the network before its commit would hold the fleet lock,
          // idle, until TCP gives up (hours), and every relay starting meanwhile would wait on it.
          tx.connection(
              connection ->
                  Sql.configureWriteTransaction(connection, Sql.applicationName(relayName), true));
          tx.select(
                  DSL.function(
                      DSL.name("pg_catalog", "pg_advisory_xact_lock"),
                      SQLDataType.VARCHAR,
                      DSL.val(("pgoutbox.fleet:" + schema).hashCode()),
                      DSL.val(0)))
              .fetch();
          // Heartbeats come from this server's clock, so one later than the expiry ahead of it
          // (infinity, a year ahead) was written by hand: it would never expire and would keep
          // every relay with other settings from starting, for good.
          tx.deleteFrom(OUTBOX_RELAYS)
              .where(OUTBOX_RELAYS.HEARTBEAT_AT.lt(Sql.clockTimestampPlus(EXPIRES_AFTER.negated())))
              .or(OUTBOX_RELAYS.HEARTBEAT_AT.gt(Sql.clockTimestampPlus(EXPIRES_AFTER)))
              .execute();
          OutboxRelaysRecord other =
              tx.selectFrom(OUTBOX_RELAYS)
                  .where(OUTBOX_RELAYS.INSTANCE_ID.ne(instance))
                  .and(
                      OUTBOX_RELAYS
                          .ORDERING
                          .ne(ordering.name())
                          .or(OUTBOX_RELAYS.DEAD_LETTER_POLICY.ne(deadLetterPolicy.name()))
                          .or(OUTBOX_RELAYS.SOURCE.ne(source)))
                  .orderBy(OUTBOX_RELAYS.STARTED_AT)
                  .limit(1)
                  .fetchOne();
          if (other != null) {
            throw new OutboxException(conflict(other));
          }
          tx.insertInto(OUTBOX_RELAYS)
              .set(OUTBOX_RELAYS.INSTANCE_ID, instance)
              .set(OUTBOX_RELAYS.RELAY_NAME, relayName)
              .set(OUTBOX_RELAYS.ORDERING, ordering.name())
              .set(OUTBOX_RELAYS.DEAD_LETTER_POLICY, deadLetterPolicy.name())
              .set(OUTBOX_RELAYS.SOURCE, source)
              .set(OUTBOX_RELAYS.STARTED_AT, Sql.clockTimestamp())
              .set(OUTBOX_RELAYS.HEARTBEAT_AT, Sql.clockTimestamp())
              .onConflictDoNothing()
              .execute();
        });
  }

  /**
   * A running relay's heartbeat: refreshes its row, and registers again if the row is gone (the
   * relay stalled past the expiry). If a relay with other settings or another source registered
   * meanwhile, both would publish, so this logs an ERROR naming it and runs {@code stop} on a
   * thread of its own; any other failure (the database unreachable) waits for the next beat.
   *
   * @return whether the row was refreshed (or registered again)
   */
  public boolean heartbeat(RelayLog log, Runnable stop) {
    try {
      // Each write commits in a transaction of its own: the host's pool may hand out connections
      // with auto-commit off, and an uncommitted beat is rolled back when the connection returns.
      int updated =
          dsl.transactionResult(
              configuration ->
                  configuration
                      .dsl()
                      .update(OUTBOX_RELAYS)
                      .set(OUTBOX_RELAYS.HEARTBEAT_AT, Sql.clockTimestamp())
                      .where(OUTBOX_RELAYS.INSTANCE_ID.eq(instance))
                      .execute());
      if (updated == 0) {
        register();
      }
      return true;
    } catch (OutboxException e) {
      log.error("{}; stopping", e.getMessage());
      Thread.ofVirtual().start(stop);
      return false;
    } catch (RuntimeException e) {
      log.debug("Heartbeat failed: {}", e.toString());
      return false;
    }
  }

  /** Deletes this relay's row. */
  public void deregister() {
    dsl.transaction(
        configuration ->
            configuration
                .dsl()
                .deleteFrom(OUTBOX_RELAYS)
                .where(OUTBOX_RELAYS.INSTANCE_ID.eq(instance))
                .execute());
  }

  private String conflict(OutboxRelaysRecord other) {
    String setting;
    if (!other.getOrdering().equals(ordering.name())) {
      setting = "ordering=" + ordering + " differs from ordering=" + other.getOrdering();
    } else if (!other.getDeadLetterPolicy().equals(deadLetterPolicy.name())) {
      setting =
          "deadLetterPolicy="
              + deadLetterPolicy
              + " differs from deadLetterPolicy="
              + other.getDeadLetterPolicy();
    } else {
      setting =
          "source ("
              + describe(source)
              + ") differs from the source ("
              + describe(other.getSource())
              + ")";
    }
    return "pgoutbox-relay["
        + relayName
        + "] - refuses to start: its "
        + setting
        + " of relay '"
        + other.getRelayName()
        + "' (instance "
        + other.getInstanceId()
        + ", started "
        + other.getStartedAt()
        + ", last heartbeat "
        + other.getHeartbeatAt()
        + ") on schema "
        + schema
        + ". Every relay of one outbox must use the same ordering and deadLetterPolicy and the same"
        + " source (all OutboxRelay, or all WalRelay on one slot): stop the other relays first (a"
        + " crashed relay stops counting "
        + EXPIRES_AFTER.toSeconds()
        + " s after its last heartbeat).";
  }

  private static String describe(String source) {
    return source.startsWith(WAL_SOURCE_PREFIX)
        ? "WalRelay on replication slot " + source.substring(WAL_SOURCE_PREFIX.length())
        : "OutboxRelay on the table";
  }
}
