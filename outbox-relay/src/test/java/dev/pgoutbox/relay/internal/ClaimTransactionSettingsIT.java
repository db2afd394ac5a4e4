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
 * The claim transaction's settings hold inside it and end with it. The claim must read the pending
 * index in order and stop at its limit whatever the statistics say (the soak found PostgreSQL
 * sorting the whole backlog once they were stale), and it runs at {@code READ COMMITTED} whatever
 * the host's pool made the session's default (it re-reads locked rows at their latest version,
 * which a {@code REPEATABLE READ} snapshot taken at its first statement would not see). The host's
 * own transactions on the same pooled connection plan and isolate as they always did.
 */
class ClaimTransactionSettingsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @Test
  void theClaimNeverSortsOrScansTheBacklogAndTheHostsTransactionsAreUntouched() throws Exception {
    try (Connection connection = db.connect()) {
      connection.setAutoCommit(false);
      DSLContext tx = transaction(connection);

      Sql.configureClaimTransaction(tx, "settings", Duration.ofSeconds(30), false);

      assertThat(show(connection, "enable_sort")).isEqualTo("off");
      assertThat(show(connection, "enable_seqscan")).isEqualTo("off");
      assertThat(show(connection, "enable_bitmapscan")).isEqualTo("off");
      assertThat(show(connection, "jit")).isEqualTo("off");
      assertThat(show(connection, "plan_cache_mode")).isEqualTo("force_custom_plan");
      connection.commit();

      assertThat(show(connection, "enable_sort")).isEqualTo("on");
      assertThat(show(connection, "enable_seqscan")).isEqualTo("on");
      assertThat(show(connection, "enable_bitmapscan")).isEqualTo("on");
      assertThat(show(connection, "plan_cache_mode")).isEqualTo("auto");
      connection.commit();
    }
  }

  @Test
  void aSerializableSessionClaimsAtReadCommittedAndStaysSerializable() throws Exception {
    try (Connection connection = db.connect()) {
      connection.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      connection.setAutoCommit(false);

      Sql.configureClaimTransaction(
          transaction(connection), "claim-settings-it", Duration.ofSeconds(30), false);

      assertThat(show(connection, "transaction_isolation"))
          .as("the claim transaction")
          .isEqualTo("read committed");
      assertThat(show(connection, "application_name"))
          .as("the settings after it, in the same round trip")
          .isEqualTo("claim-settings-it");
      connection.commit();
      assertThat(show(connection, "transaction_isolation"))
          .as("the next transaction, at the session's own level")
          .isEqualTo("serializable");
      connection.commit();
    }
  }

  private static DSLContext transaction(Connection connection) {
    return DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));
  }

  private static String show(Connection connection, String setting) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
