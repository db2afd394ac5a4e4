package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.relay.wal.WalRelay;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

/** The WAL relay's builder refuses what it cannot run with, naming the setting and its bound. */
class WalRelayBuilderTest {

  private static WalRelay.Builder builder() {
    PGSimpleDataSource dataSource = new PGSimpleDataSource();
    dataSource.setUrl("jdbc:postgresql://127.0.0.1:1/none");
    return WalRelay.builder().dataSource(dataSource).publisher(new RecordingPublisher());
  }

  @Test
  void namesTheSlotAndPublicationAfterTheSchemaByDefault() {
    WalRelay relay = builder().schema("shop").build();
    assertThat(relay.slotName()).isEqualTo("pgoutbox_shop");
    assertThat(relay.publicationName()).isEqualTo("pgoutbox_shop");
    assertThat(relay.isReading()).isFalse();
  }

  @Test
  void deletesDeliveredRowsInLargeBatchesUnlessTheConfigSaysOtherwise() {
    RelayConfig unset = RelayConfig.builder().maxAttempts(3).build();
    RelayConfig wal = unset.withDefaults(WalRelay.DEFAULT_BATCH_SIZE, WalRelay.DEFAULT_COMPLETION);
    assertThat(wal.completion()).isEqualTo(Completion.DELETE);
    assertThat(wal.batchSize()).isEqualTo(2_000);
    assertThat(wal.maxAttempts()).isEqualTo(3);
    assertThat(unset.completion())
        .as("the table relay's default")
        .isEqualTo(Completion.MARK_PROCESSED);
    assertThat(unset.batchSize()).isEqualTo(RelayConfig.DEFAULT_BATCH_SIZE);

    RelayConfig chosen =
        RelayConfig.builder().batchSize(200).completion(Completion.MARK_PROCESSED).build();
    RelayConfig kept =
        RelayConfig.from(chosen)
            .maxAttempts(5)
            .build()
            .withDefaults(WalRelay.DEFAULT_BATCH_SIZE, WalRelay.DEFAULT_COMPLETION);
    assertThat(kept.completion())
        .as("set, even to the table default")
        .isEqualTo(Completion.MARK_PROCESSED);
    assertThat(kept.batchSize()).isEqualTo(200);
  }

  @Test
  void refusesUnorderedRelaying() {
    assertThatThrownBy(
            () ->
                builder()
                    .config(RelayConfig.builder().ordering(Ordering.UNORDERED).build())
                    .build())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("ordering STRICT");
  }

  @Test
  void refusesSlotNamesPostgresqlWouldNot() {
    assertThatThrownBy(() -> builder().slotName("Orders"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("slotName must be 1 to 63 lowercase letters, digits or '_', was 'Orders'");
    assertThatThrownBy(() -> builder().publicationName("x".repeat(64)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("publicationName must be 1 to 63");
  }

  @Test
  void refusesAnAttachRetryIntervalOutOfRange() {
    assertThatThrownBy(() -> builder().attachRetryInterval(Duration.ofMillis(1)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("attachRetryInterval must be between 10 ms and 10 min, was PT0.001S");
  }

  @Test
  void needsAReplicationConnectionItCanDeriveOrIsGiven() {
    javax.sql.DataSource opaque =
        (javax.sql.DataSource)
            java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {javax.sql.DataSource.class},
                (proxy, method, args) -> {
                  throw new UnsupportedOperationException(method.getName());
                });
    WalRelay.Builder builder =
        WalRelay.builder().dataSource(opaque).publisher(new RecordingPublisher());
    assertThatThrownBy(builder::build)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("call replicationConnection(jdbcUrl, properties)");
    assertThat(
            builder
                .replicationConnection("jdbc:postgresql://127.0.0.1:1/none", new Properties())
                .build()
                .slotName())
        .isEqualTo("pgoutbox_public");
  }
}
