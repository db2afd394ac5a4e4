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
 * The claim transaction runs at {@code READ COMMITTED} whatever the host's pool made the session's
 * default (its claim re-reads locked rows at their latest version, which a {@code REPEATABLE READ}
 * snapshot taken at the first statement would not see), and leaves the session as it found it.
 */
class ClaimTransactionSettingsIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  @Test
  void aSerializableSessionClaimsAtReadCommittedAndStaysSerializable() throws Exception {
    try (Connection connection = db.connect()) {
      connection.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      connection.setAutoCommit(false);
      DSLContext tx =
          DSL.using(connection, SQLDialect.POSTGRES, OutboxSchema.jooqSettings(db.schema()));

      Sql.configureClaimTransaction(tx, "claim-settings-it", Duration.ofSeconds(30), false);

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

  private static String show(Connection connection, String setting) throws SQLException {
    try (Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
