package dev.pgoutbox.admin;

import dev.pgoutbox.core.internal.SearchPath;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.internal.StatsReader;
import java.util.function.Function;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * How {@link OutboxAdmin} and its helpers reach the database: one jOOQ context whose every
 * statement runs under the fixed search_path (nothing planted on the host's path can run in it; see
 * SearchPath), and one rule for reporting a failure.
 */
final class AdminDatabase {

  final DSLContext dsl;
  final String schema;

  AdminDatabase(DataSource dataSource, String schema) {
    this.schema = schema;
    this.dsl =
        DSL.using(
            SearchPath.pinned(dataSource), SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema));
  }

  /** Runs {@code action}, reporting a database failure as "Could not {@code what}". */
  <T> T read(String what, Supplier<T> action) {
    return StatsReader.read(what, action);
  }

  /**
   * Runs one write in a transaction of its own and commits it: on a pool whose connections come
   * with auto-commit off, a bare statement would be rolled back when the connection goes back,
   * after reporting success.
   */
  <T> T write(String what, Function<DSLContext, T> statement) {
    return read(what, () -> dsl.transactionResult(tx -> statement.apply(tx.dsl())));
  }
}
