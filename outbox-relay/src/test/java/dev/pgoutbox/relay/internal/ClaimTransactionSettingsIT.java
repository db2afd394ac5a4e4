package dev.pgoutbox.relay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.testing.TestSchema;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The planner settings of the claim transaction hold inside it and end with it: the claim must read
 * the pending index in order and stop at its limit whatever the statistics say (the soak found
 * PostgreSQL sorting the whole backlog once they were stale), and the host's own transactions on
 * the same pooled connection must plan as they always did.
 */
class ClaimTransactionSettingsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @Test
  void theClaimNeverSortsOrBitmapScansTheBacklogAndTheHostsTransactionsAreUntouched()
      throws Exception {
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));

      Sql.configureClaimTransaction(tx, "settings", Duration.ofSeconds(30), false);

      assertThat(show(connection, "enable_sort")).isEqualTo("off");
      assertThat(show(connection, "enable_bitmapscan")).isEqualTo("off");
      assertThat(show(connection, "jit")).isEqualTo("off");
      assertThat(show(connection, "plan_cache_mode")).isEqualTo("force_custom_plan");
      connection.commit();

      assertThat(show(connection, "enable_sort")).isEqualTo("on");
      assertThat(show(connection, "enable_bitmapscan")).isEqualTo("on");
      assertThat(show(connection, "plan_cache_mode")).isEqualTo("auto");
      connection.commit();
    }
  }

  private static String show(Connection connection, String setting) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery("show " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
