package dev.pgoutbox.example.orders;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.testing.EmbeddedKafka;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Kafka goes down while orders keep coming; when it is back, nothing was lost or doubled. */
class BrokerOutageIT {

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  private static final Duration WAIT = Duration.ofSeconds(90);

  static OrderApplication app;
  static Http http;

  @BeforeAll
  static void start() {
    app =
        OrderApplication.start(
            AppSettings.builder()
                .jdbcUrl(db.jdbcUrl())
                .schema(db.schema())
                .port(0)
                .relayConfig(
                    RelayConfig.builder()
                        .pollInterval(Duration.ofMillis(200))
                        .maxAttempts(100)
                        .exponentialBackoff(Duration.ofMillis(100), 2.0, 0.2, Duration.ofSeconds(1))
                        .publishTimeout(Duration.ofSeconds(5))
                        .build())
                .deliveryTimeout(Duration.ofSeconds(1))
                .build());
    http = new Http(app.baseUri());
  }

  @AfterAll
  static void stop() {
    if (app != null) {
      app.close();
    }
  }

  @Test
  void aBrokerOutageLosesNothingAndShipsEveryPaidOrderOnce() {
    String schema = db.schema();
    EmbeddedKafka kafka = Objects.requireNonNull(app.embeddedKafka());
    List<String> paid = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      String id = http.post("/orders", Http.order("before-" + i, 1)).json().get("id").asText();
      assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);
      paid.add(id);
    }
    Eventually.until(
        WAIT, () -> app.admin().pendingCount() == 0, () -> "pending " + app.admin().pendingCount());

    kafka.stop();
    for (int i = 0; i < 10; i++) {
      Http.Reply created = http.post("/orders", Http.order("during-" + i, 2));
      assertThat(created.status()).as("orders are taken while the broker is down").isEqualTo(201);
      String id = created.json().get("id").asText();
      assertThat(http.post("/orders/" + id + "/payment").status()).isEqualTo(200);
      paid.add(id);
    }
    // Nothing can be published: all 20 events wait, and their attempts fail and back off.
    Eventually.until(
        WAIT,
        () -> maxAttempts(schema) >= 2,
        () -> "max attempts " + maxAttempts(schema) + ", pending " + app.admin().pendingCount());
    assertThat(app.admin().pendingCount()).isEqualTo(20);
    assertThat(app.admin().deadLetterCount()).isZero();
    assertThat(http.get("/health").status()).as("health shows the broker down").isEqualTo(503);

    kafka.restart();
    Eventually.until(
        WAIT,
        () -> app.admin().pendingCount() == 0 && Db.ordersNotCaughtUp(db, schema) == 0,
        () ->
            "pending "
                + app.admin().pendingCount()
                + ", orders not caught up "
                + Db.ordersNotCaughtUp(db, schema));

    for (String id : paid) {
      assertThat(
              db.queryLong(
                  "SELECT count(*) FROM " + schema + ".shipments WHERE order_id = '" + id + "'"))
          .as("shipments of " + id)
          .isEqualTo(1);
    }
    assertThat(db.queryLong("SELECT count(*) FROM " + schema + ".shipments"))
        .isEqualTo(paid.size());
    assertThat(app.shipping().orderingErrorCount()).isZero();
    assertThat(app.admin().deadLetterCount()).isZero();
    Eventually.until(
        WAIT, () -> http.get("/health").status() == 200, () -> http.get("/health").text());
  }

  private static long maxAttempts(String schema) {
    return db.queryLong(
        "SELECT coalesce(max(attempts), 0) FROM "
            + schema
            + ".outbox_events"
            + " WHERE processed_at IS NULL");
  }
}
