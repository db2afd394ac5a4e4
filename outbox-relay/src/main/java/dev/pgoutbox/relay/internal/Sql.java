package dev.pgoutbox.relay.internal;

import java.time.Duration;
import java.time.OffsetDateTime;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.impl.DSL;
import org.jooq.impl.SQLDataType;

/**
 * The few PostgreSQL expressions the generated jOOQ tables cannot express, in one place. Every
 * value is a bind variable; nothing is concatenated into SQL.
 */
public final class Sql {

  private Sql() {}

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
   * Bounds how long this transaction may sit idle (e.g. while a publish hangs): PostgreSQL ends the
   * session after {@code timeout}, releasing its row locks, so a stuck relay cannot hold events or
   * vacuum back for long.
   */
  public static void limitIdleInTransaction(DSLContext tx, Duration timeout) {
    tx.select(
            DSL.function(
                "set_config",
                SQLDataType.VARCHAR,
                DSL.val("idle_in_transaction_session_timeout"),
                DSL.val(Long.toString(timeout.toMillis())),
                DSL.val(true)))
        .fetch();
  }

  /** {@code LISTEN "channel"}; the channel is a validated identifier (see OutboxSchema). */
  public static String listen(String channel) {
    return "LISTEN " + DSL.quotedName(channel);
  }
}
