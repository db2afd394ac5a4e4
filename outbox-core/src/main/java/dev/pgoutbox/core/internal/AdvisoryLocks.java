package dev.pgoutbox.core.internal;

import java.util.List;
import org.jooq.DSLContext;

/**
 * The one place where pgoutbox's writer sends SQL that jOOQ's generated tables cannot express:
 * transaction-level advisory locks that serialize the writers of one aggregate.
 *
 * <p>The lock key of an aggregate is {@code hashtextextended(aggregate_type || ':' || aggregate_id,
 * 0)}, so hosts can take the same lock in their own SQL.
 */
public final class AdvisoryLocks {

  private static final String LOCK_ONE = "select pg_advisory_xact_lock(hashtextextended(?, 0))";

  /** Takes the keys' locks one after the other, in the order given, in one statement. */
  private static final String LOCK_MANY =
      "select count(pg_advisory_xact_lock(hashtextextended(k, 0)))"
          + " from unnest(cast(? as text[])) as t(k)";

  private AdvisoryLocks() {}

  /** The lock key text of an aggregate (hashed by PostgreSQL). */
  public static String key(String aggregateType, String aggregateId) {
    return aggregateType + ':' + aggregateId;
  }

  /**
   * Takes the transaction-level advisory locks of {@code sortedKeys}, waiting for each, in the
   * order given; the caller sorts them so that two batches never lock the same keys in opposite
   * orders. Released by PostgreSQL at commit or rollback.
   */
  public static void lock(DSLContext tx, List<String> sortedKeys) {
    if (sortedKeys.size() == 1) {
      tx.fetch(LOCK_ONE, sortedKeys.get(0));
    } else if (!sortedKeys.isEmpty()) {
      tx.fetch(LOCK_MANY, (Object) sortedKeys.toArray(new String[0]));
    }
  }
}
