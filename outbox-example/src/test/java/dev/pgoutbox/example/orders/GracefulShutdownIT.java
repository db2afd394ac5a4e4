package dev.pgoutbox.example.orders;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Shutting the service down with events still to publish (and a batch in flight) loses nothing: a
 * second instance on the same database and broker publishes the rest, and shipping resumes where it
 * committed.
 */
class GracefulShutdownIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  static EmbeddedKafka kafka;

  @BeforeAll
  static void startKafka() {
    kafka = EmbeddedKafka.start();
  }

  @AfterAll
  static void stopKafka() {
    if (kafka != null) {
      kafka.close();
    }
  }

  private static AppSettings settings() {
    return AppSettings.builder()
        .jdbcUrl(db.jdbcUrl())
        .schema(db.schema())
        .broker(new BrokerChoice(BrokerChoice.Kind.KAFKA, kafka.bootstrapServers()))
        .port(0)
        .relayConfig(
            RelayConfig.builder().batchSize(5).pollInterval(Duration.ofMillis(200)).build())
        .deliveryTimeout(Duration.ofSeconds(5))
        .build();
  }

  @Test
  void closingWithAnUnpublishedBacklogLosesNothingAndARestartFinishesIt() {
    List<String> paid = new ArrayList<>();
    URI firstAddress;
    try (OrderApplication first = OrderApplication.start(settings())) {
      firstAddress = first.baseUri();
      Http http = new Http(first.baseUri());
      for (int i = 0; i < 30; i++) {
        String id = http.post("/orders", Http.order("shutdown-" + i, 1)).json().get("id").asText();
        assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);
        paid.add(id);
        if (i == 19) {
          // The last ten orders' events cannot be published before the shutdown: a backlog
          // for sure, and a relay batch in flight (waiting on Kafka) when close() comes.
          kafka.stop();
        }
      }
    } // close() right away: stop HTTP, let the relay finish its batch, close the consumer.

    Http stopped = new Http(firstAddress);
    assertThatThrownBy(() -> stopped.get("/health")).as("the HTTP server is closed");
    long left =
        db.queryLong(
            "SELECT count(*) FROM " + db.schema() + ".outbox_events WHERE processed_at IS NULL");
    assertThat(left)
        .as("events were still pending at shutdown, or the test proves nothing")
        .isPositive();

    kafka.restart();
    try (OrderApplication second = OrderApplication.start(settings())) {
      Eventually.until(
          Duration.ofSeconds(90),
          () -> second.admin().pendingCount() == 0 && Db.ordersNotCaughtUp(db, db.schema()) == 0,
          () -> "pending " + second.admin().pendingCount());
      for (String id : paid) {
        assertThat(
                db.queryLong(
                    "SELECT count(*) FROM "
                        + db.schema()
                        + ".shipments WHERE order_id = '"
                        + id
                        + "'"))
            .as("shipments of " + id)
            .isEqualTo(1);
      }
      assertThat(second.shipping().orderingErrorCount()).isZero();
    }
  }
}
