package dev.pgoutbox.tools;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchRuntimeException;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.core.OutboxException;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.wal.WalRelay;
import java.net.ServerSocket;
import java.sql.SQLException;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * A relay process keeps trying to start while the database is out of reach (the chaos run restarts
 * relays while PostgreSQL is down or cut off), and fails at once on anything else.
 */
class RelayCommandTest {

  @Test
  void aWalRelayStartingAgainstADatabaseThatIsNotThereIsTriedAgain() throws Exception {
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    HikariConfig pool = new HikariConfig();
    pool.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + closedPort + "/postgres?user=postgres");
    pool.setConnectionTimeout(250);
    pool.setInitializationFailTimeout(-1);
    try (HikariDataSource dataSource = new HikariDataSource(pool)) {
      Publisher publisher = batch -> CompletableFuture.completedFuture(null);
      WalRelay relay =
          WalRelay.builder().name("nowhere").dataSource(dataSource).publisher(publisher).build();

      RuntimeException failure = catchRuntimeException(relay::start);

      assertThat(failure).isInstanceOf(OutboxException.class);
      assertThat(RelayCommand.databaseUnavailable(failure)).isTrue();
    }
  }

  @Test
  void aServerCrashedOrRecoveringIsTriedAgain() {
    SQLException recovering = new SQLException("the database system is in recovery mode", "57P03");

    assertThat(RelayCommand.databaseUnavailable(new OutboxException("start", recovering))).isTrue();
  }

  @Test
  void aSettingOrAGrantFailsTheCommand() {
    SQLException denied = new SQLException("permission denied for table outbox_events", "42501");

    assertThat(RelayCommand.databaseUnavailable(new OutboxException("start", denied))).isFalse();
    assertThat(RelayCommand.databaseUnavailable(new OutboxException("wal_level is replica")))
        .isFalse();
  }
}
