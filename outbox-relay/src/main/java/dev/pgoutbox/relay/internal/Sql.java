package dev.pgoutbox.relay.internal;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;

import dev.pgoutbox.core.internal.SearchPath;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.OffsetDateTime;
import org.jooq.Condition;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The few PostgreSQL expressions the generated jOOQ tables cannot express, in one place. Every
 * value is a bind variable; nothing is concatenated into SQL.
 */
public final class Sql {

  /**
   * Milliseconds from the {@code timestamptz} {@code column} to now, never negative, and 0 for
   * {@code infinity} and {@code -infinity} (rows written by hand), whose age is no number: the
   * arithmetic failed on them, and with it every read of a lag that met such a row first.
   */
  public static String ageMillis(String column) {
    return "CASE WHEN pg_catalog.isfinite("
        + column
        + ") THEN greatest(0, (extract(epoch from pg_catalog.clock_timestamp() - "
        + column
        + ") * 1000)::bigint) ELSE 0 END";
  }

  /** Names the session in {@code pg_stat_activity} for as long as it lasts. */
  public static final String SET_APPLICATION_NAME =
      "SELECT pg_catalog.set_config('application_name', ?, false),"
          + " pg_catalog.set_config('search_path', '"
          + SearchPath.FIXED
          + "', false)";

  /**
   * True when no writer of the outbox whose wake-up channel is the parameter is committing: the
   * notify trigger (schema version 7) holds {@code (hashtext(channel), 1)} shared from its run at
   * commit until its transaction has ended, so taking it exclusively, and at once letting go,
   * succeeds only when every writer that had run it has finished and its rows are visible.
   */
  public static final String NO_WRITER_COMMITTING =
      "SELECT CASE WHEN pg_catalog.pg_try_advisory_lock(pg_catalog.hashtext(?::pg_catalog.text), 1)"
          + " THEN pg_catalog.pg_advisory_unlock(pg_catalog.hashtext(?::pg_catalog.text), 1)"
          + " ELSE false END";

  /**
   * The settings every relay write transaction starts with; see {@link #configureWriteTransaction}.
   */
  public static final String CONFIGURE_WRITE_TRANSACTION =
      "SELECT "
          + SearchPath.FIX_FOR_TRANSACTION
          + ", pg_catalog.set_config('application_name', ?, true),"
          + " pg_catalog.set_config('idle_in_transaction_session_timeout', ?, true),"
          + " pg_catalog.set_config('lock_timeout', ?, true),"
          + " pg_catalog.set_config('synchronous_commit', ?, true)";

  /**
   * The claim transaction's settings: those of every write, plus its isolation level and planner
   * settings; see {@link #configureClaimTransaction}.
   */
  public static final String CONFIGURE_CLAIM_TRANSACTION =
      "SET TRANSACTION ISOLATION LEVEL READ COMMITTED; "
          + CONFIGURE_WRITE_TRANSACTION
          + ", pg_catalog.set_config('plan_cache_mode', 'force_custom_plan', true),"
          + " pg_catalog.set_config('enable_bitmapscan', 'off', true),"
          + " pg_catalog.set_config('enable_seqscan', 'off', true),"
          + " pg_catalog.set_config('enable_sort', 'off', true),"
          + " pg_catalog.set_config('jit', 'off', true)";

  /**
   * How long a WAL relay write transaction may sit idle or wait for a row lock. They never wait for
   * a publisher, so this only bounds what a lost connection leaves behind.
   */
  public static final Duration WRITE_TRANSACTION_TIMEOUT = Duration.ofSeconds(10);

  private static final org.jooq.Name PG_TRY_ADVISORY_XACT_LOCK =
      DSL.name("pg_catalog", "pg_try_advisory_xact_lock");

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
    return DSL.field("pg_catalog.clock_timestamp()", SQLDataType.TIMESTAMPWITHTIMEZONE);
  }

  /** How many failed attempts {@code error_history} keeps (schema version 13): the newest. */
  public static final int ERROR_HISTORY_KEPT = 10;

  /**
   * {@code error_history} with one more failed attempt appended, {@code {"attempt", "at", "error",
   * "dead"}}, the newest {@value #ERROR_HISTORY_KEPT} kept.
   */
  public static Field<JSONB> errorHistoryAppended(
      Field<Integer> attempt, Field<String> reason, boolean dead) {
    return DSL.field(
        "pg_catalog.jsonb_path_query_array(coalesce({0}, '[]'::pg_catalog.jsonb)"
            + " OPERATOR(pg_catalog.||) pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object("
            + "'attempt', {1}::pg_catalog.int4, 'at', pg_catalog.clock_timestamp(),"
            + " 'error', {2}::pg_catalog.text, 'dead', {3})), '$[last - "
            + (ERROR_HISTORY_KEPT - 1)
            + " to last]')",
        SQLDataType.JSONB,
        OUTBOX_EVENTS.ERROR_HISTORY,
        attempt,
        reason,
        DSL.inline(dead));
  }

  /** {@code clock_timestamp() + delay}, in database time. */
  public static Field<OffsetDateTime> clockTimestampPlus(Duration delay) {
    return clockTimestampPlusMillis(DSL.val(delay.toMillis()));
  }

  /** {@code clock_timestamp() + millis milliseconds}, in database time. */
  public static Field<OffsetDateTime> clockTimestampPlusMillis(Field<Long> millis) {
    return DSL.field(
        "pg_catalog.clock_timestamp() + ({0} * interval '1 millisecond')",
        SQLDataType.TIMESTAMPWITHTIMEZONE, millis);
  }

  /**
   * Settings local to the relay's claim transaction, in one round trip, sent as its first
   * statement:
   *
   * <ul>
   *   <li>{@code READ COMMITTED}, whatever the pool's default: each statement of the batch sees
   *       what committed before it (the claim's re-read of a locked row, the marks). Set for this
   *       transaction only: reading and restoring the session's level through JDBC cost three round
   *       trips per batch, and each round trip waits for a core when the machine is busy;
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
   *       no event is ever lost: events were committed durably by their writers;
   *   <li>{@code plan_cache_mode = force_custom_plan}: the claim is planned for this execution's
   *       values and the table as it is now. The driver prepares a statement run five times, and
   *       PostgreSQL may then reuse a generic plan made while the outbox was empty (or never
   *       analysed), which kept reading the whole backlog once it grew. Planning the claim costs
   *       well under a millisecond; a wrong cached plan cost seconds per batch.
   *   <li>{@code enable_seqscan = off}: with statistics, PostgreSQL expects a head (its aggregate's
   *       lowest pending position) to be rare, concludes that a search from position 0 must read
   *       every pending row to fill its limit, and reads them all in a sequential scan and a sort
   *       (2.5 s on 100,000 pending rows over 10,000 aggregates) where the position index yields
   *       the heads in order and stops at the limit. Every statement of the batch has an index that
   *       serves it;
   *   <li>{@code enable_sort = off}: the claim reads pending rows in {@code position} order off the
   *       pending index and stops at its limit. Once the statistics put the pending rows it expects
   *       to keep near that limit (stale after a backlog built up), PostgreSQL preferred to read
   *       every pending row through the aggregate index, probe each for its aggregate's head, and
   *       sort them: the soak's relay, 190,000 events behind, spent 3.9 s per claim that way and
   *       0.12 s with the ordered scan, and drained at 543 events/s. With sorting off, the planner
   *       sorts only where nothing else gives the order (the runs behind the heads);
   *   <li>{@code jit = off}: on a large table not yet analysed the claim's estimated cost passes
   *       {@code jit_above_cost}, and PostgreSQL spent about 150 ms compiling each claim that ran
   *       in 2 to 30 ms (200,000 pending rows: the drain fell from about 40,000 to 3,000 events/s).
   *       JIT pays off for long analytical queries, never for the relay's.
   * </ul>
   *
   * <p>Plain SQL with bind placeholders, a constant: rendering it through jOOQ cost a statement
   * render per batch for four function calls.
   */
  public static void configureClaimTransaction(
      DSLContext tx, String applicationName, Duration idleTimeout, boolean synchronousCommit) {
    tx.connection(
        connection ->
            configure(
                connection,
                CONFIGURE_CLAIM_TRANSACTION,
                applicationName,
                idleTimeout,
                synchronousCommit));
  }

  /**
   * Settings local to one of the relay's short write transactions (the WAL relay parking failed
   * events and completing published ones, a relay registering in the fleet), sent as its first
   * statement: its {@code application_name}, {@code synchronous_commit}, and {@link
   * #WRITE_TRANSACTION_TIMEOUT} as {@code idle_in_transaction_session_timeout} and {@code
   * lock_timeout}. A transaction whose connection a network partition cut off stays open on the
   * server, idle, with its row locks, until TCP gives up (hours): the chaos run's reader replayed
   * the same failures into those locks, timed out, and attached again, forever; a registration cut
   * off before its commit kept every relay starting afterwards waiting on the fleet lock. With the
   * timeout PostgreSQL ends such a session and the next attempt goes through.
   */
  public static void configureWriteTransaction(
      Connection connection, String applicationName, boolean synchronousCommit)
      throws SQLException {
    configure(
        connection,
        CONFIGURE_WRITE_TRANSACTION,
        applicationName,
        WRITE_TRANSACTION_TIMEOUT,
        synchronousCommit);
  }

  /** Work done inside one write transaction. */
  @FunctionalInterface
  public interface TransactionWork<T> {
    T run(Connection connection) throws SQLException;
  }

  /**
   * Runs {@code work} on {@code connection} in a transaction of its own, begun with {@link
   * #configureWriteTransaction}, and commits it; any failure rolls it back and is rethrown. The
   * connection's auto-commit is restored; a broken connection is left for its pool to discard.
   */
  public static <T> T inWriteTransaction(
      Connection connection,
      String applicationName,
      boolean synchronousCommit,
      TransactionWork<T> work)
      throws SQLException {
    boolean autoCommit = connection.getAutoCommit();
    connection.setAutoCommit(false);
    try {
      configureWriteTransaction(connection, applicationName, synchronousCommit);
      T result = work.run(connection);
      connection.commit();
      return result;
    } catch (SQLException | RuntimeException e) {
      try {
        connection.rollback();
      } catch (SQLException ignored) {
        // A broken connection: closing it ends the transaction all the same.
      }
      throw e;
    } finally {
      try {
        connection.setAutoCommit(autoCommit);
      } catch (SQLException ignored) {
        // The pool discards a broken connection.
      }
    }
  }

  /** Runs one of the settings statements above, whose first four binds are the same. */
  private static void configure(
      Connection connection,
      String settings,
      String applicationName,
      Duration timeout,
      boolean synchronousCommit)
      throws SQLException {
    try (PreparedStatement statement = connection.prepareStatement(settings)) {
      String millis = Long.toString(timeout.toMillis());
      statement.setString(1, applicationName);
      statement.setString(2, millis);
      statement.setString(3, millis);
      statement.setString(4, synchronousCommit ? "on" : "off");
      statement.execute();
    }
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
    return tryLockAggregate(DSL.val(namespace), aggregateType, aggregateId);
  }

  /** {@link #tryLockAggregate(int, Field, Field)} with the namespace as a field (e.g. a bind). */
  public static Condition tryLockAggregate(
      Field<Integer> namespace, Field<String> aggregateType, Field<String> aggregateId) {
    return DSL.condition(
        DSL.function(
            PG_TRY_ADVISORY_XACT_LOCK,
            SQLDataType.BOOLEAN,
            namespace,
            aggregateKey(aggregateType, aggregateId)));
  }

  /**
   * Whether no other session holds the aggregate's lock ({@link #tryLockAggregate}) at this moment,
   * leaving nothing held: a session-level try, released at once when it succeeds ({@code CASE}
   * fixes that order, so only a lock this call took is released). A check, not a claim: the
   * aggregate may be taken right after it, so whoever goes on must still take the lock itself. A
   * lock the session already held (its own transaction's) stays held. A session-level lock survives
   * an abort, yet a cancel cannot leave this one held: PostgreSQL acts on a cancel only where it
   * checks for interrupts, and nothing between the try and the release checks
   * (AggregateLockFreeCancelIT cancels it mid-scan hundreds of times; the same check with {@code
   * pg_sleep(0)} between the calls leaks under that attack). Keep it so: no function that waits,
   * sleeps or reads between the two calls.
   */
  public static Condition aggregateLockFree(
      int namespace, Field<String> aggregateType, Field<String> aggregateId) {
    Field<Integer> key = aggregateKey(aggregateType, aggregateId);
    Field<Boolean> taken =
        DSL.function(
            DSL.name("pg_catalog", "pg_try_advisory_lock"),
            SQLDataType.BOOLEAN,
            DSL.inline(namespace),
            key);
    Field<Boolean> released =
        DSL.function(
            DSL.name("pg_catalog", "pg_advisory_unlock"),
            SQLDataType.BOOLEAN,
            DSL.inline(namespace),
            key);
    return DSL.condition(DSL.when(DSL.condition(taken), released).otherwise(DSL.inline(false)));
  }

  /** The second key of an aggregate's lock: {@code hashtext(type || ':' || id)}. */
  private static Field<Integer> aggregateKey(
      Field<String> aggregateType, Field<String> aggregateId) {
    return DSL.function(
        DSL.name("pg_catalog", "hashtext"),
        SQLDataType.INTEGER,
        aggregateType.concat(DSL.inline(":"), aggregateId));
  }

  /** {@code LISTEN "channel"}; the channel is a validated identifier (see OutboxSchema). */
  public static String listen(String channel) {
    return "LISTEN " + DSL.quotedName(channel);
  }
}
