package dev.pgoutbox.relay.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.core.consumer.WebhookSignature;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.relay.testing.DeadRows.Dead;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A real {@code OutboxRelay} drains the real outbox table through {@link WebhookPublisher}. */
class WebhookRelayIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static final byte[] SECRET = "relay-secret".getBytes(StandardCharsets.UTF_8);

  HttpServer server;
  ExecutorService executor;
  volatile OrderChecker checker;
  volatile IntSupplier status = () -> 200;

  @BeforeEach
  void startServer() throws Exception {
    executor = Executors.newVirtualThreadPerTaskExecutor();
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 200);
    server.setExecutor(executor);
    server.createContext(
        "/hook",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          var h = exchange.getRequestHeaders();
          int answer = status.getAsInt();
          if (!WebhookSignature.verify(SECRET, body, h.getFirst(WebhookSignature.HEADER))) {
            answer = 401;
          } else if (answer == 200 && checker != null) {
            checker.received(
                WebhookEventIds.eventId(h),
                h.getFirst(WebhookPublisher.AGGREGATE_ID_HEADER),
                new String(body, StandardCharsets.UTF_8),
                h.getFirst("traceparent"));
          }
          if (new String(body, StandardCharsets.UTF_8).contains("reject-me")) {
            answer = 400;
          }
          exchange.sendResponseHeaders(answer, -1);
          exchange.close();
        });
    server.start();
  }

  @AfterEach
  void stopServer() {
    server.stop(0);
    executor.shutdownNow();
  }

  /** Signed the deprecated way, which receivers of older relays still check. */
  @SuppressWarnings("deprecation") // signingSecret
  WebhookPublisher publisher() {
    return WebhookPublisher.builder(
            URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/hook"))
        .signingSecret(SECRET)
        .maxConcurrency(32)
        .requestTimeout(Duration.ofSeconds(5))
        .build();
  }

  @Test
  void relayDrainsTenThousandEventsOverAThousandAggregatesThroughWebhooks() throws Exception {
    TestEvents events = TestEvents.of("order", 1000, 10, 500);
    checker = events.checker();
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    try (WebhookPublisher publisher = publisher()) {
      drive.drain(publisher, 1, 500, Duration.ofMinutes(3));
    }
    drive.assertAllPublishedBut(0);
    checker.assertComplete();
  }

  @Test
  void receiverUnavailableMidRunEventsBackOffAndAreAllDeliveredAfter() throws Exception {
    TestEvents events = TestEvents.of("outage", 200, 5, 200);
    checker = events.checker();
    status = () -> 503;
    RelayDrive drive = new RelayDrive(db).truncate().write(events.all());
    try (WebhookPublisher publisher = publisher()) {
      CompletableFuture<Duration> drain =
          drive.drainInBackground(publisher, 1, 200, Duration.ofMinutes(3));
      Eventually.await(
          "failed attempts while the receiver answers 503",
          Duration.ofMinutes(1),
          () -> drive.failedAttempts() > 0 || drain.isDone());
      status = () -> 200;
      drain.get(4, TimeUnit.MINUTES);
    }
    drive.assertAllPublishedBut(0);
    checker.assertComplete();
  }

  @Test
  void clientErrorIsDeadLetteredWithAReadableLastError() throws Exception {
    OutboxMessage rejected = TestEvents.one("order", "a-1", 1, "{\"note\":\"reject-me\"}");
    OutboxMessage fine = TestEvents.one("order", "a-2", 1, "{}");
    RelayDrive drive = new RelayDrive(db).truncate().write(List.of(rejected, fine));
    try (WebhookPublisher publisher = publisher()) {
      drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
    }
    List<Dead> dead = drive.deadLetters();
    assertThat(dead).extracting(Dead::id).containsExactly(rejected.id());
    assertThat(dead.get(0).lastError()).contains("HTTP 400").contains("/hook");
    assertThat(drive.processed()).isEqualTo(1);
  }
}
