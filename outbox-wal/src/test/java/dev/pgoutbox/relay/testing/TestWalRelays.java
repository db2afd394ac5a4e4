package dev.pgoutbox.relay.testing;

import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.wal.WalRelay;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.Properties;

/**
 * WAL relays on a test schema, built the one way the tests share: slot {@code slot}, the schema's
 * publication {@code pub_<schema>}, the replication connection to the test server, and a short
 * attach retry so fail-over tests run in seconds. Callers add or override what they test.
 */
public final class TestWalRelays {

  private TestWalRelays() {}

  /**
   * A builder named {@code wal-<slot>} for {@code db}'s outbox, publishing to {@code publisher}.
   */
  public static WalRelay.Builder builder(TestSchema db, String slot, Publisher publisher) {
    return WalRelay.builder()
        .name("wal-" + slot)
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .slotName(slot)
        .publicationName("pub_" + db.schema())
        .attachRetryInterval(Duration.ofMillis(200))
        .replicationConnection(db.jdbcUrl(), new Properties());
  }
}
