package dev.pgoutbox.relay.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.admin.DeadLetter;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * Webhook URLs that carry credentials (a query token, an access token, a signature, user info)
 * whose receivers fail every way they can: HTTP 500, connection refused, no answer in time. The
 * real relay dead-letters each; neither {@code last_error} in the row, nor the relay's log, nor
 * {@link OutboxAdmin}'s dead-letter listing shows a credential.
 */
class WebhookSecretsRedactedIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static final List<String> SECRETS =
      List.of("Q-T0KEN-s3cret", "ACCESS-s3cret", "SIG-s3cret", "PASS-s3cret", "USER-s3cret");

  @Test
  void noCredentialOfAWebhookUrlReachesLastErrorTheLogOrTheDeadLetters() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    server.createContext(
        "/fails",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          byte[] reply = "internal error".getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(500, reply.length);
          exchange.getResponseBody().write(reply);
          exchange.close();
        });
    server.createContext(
        "/hangs",
        exchange -> {
          try {
            release.await(1, TimeUnit.MINUTES);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          exchange.close();
        });
    server.start();
    int refusedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      refusedPort = s.getLocalPort();
    }
    String query = "?token=Q-T0KEN-s3cret&access_token=ACCESS-s3cret&sig=SIG-s3cret";
    Map<String, URI> urls =
        Map.of(
            "http-500",
            URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/fails" + query),
            "refused",
            URI.create("http://127.0.0.1:" + refusedPort + "/events" + query),
            "timeout",
            URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/hangs" + query),
            "user-info",
            URI.create(
                "http://USER-s3cret:PASS-s3cret@127.0.0.1:" + refusedPort + "/events" + query));
    List<OutboxMessage> events =
        urls.keySet().stream().map(a -> TestEvents.one("order", a, 1, "{}")).toList();

    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    ListAppender<ILoggingEvent> logs = new ListAppender<>();
    logs.start();
    root.addAppender(logs);
    RelayDrive drive = new RelayDrive(db).truncate().write(events);
    ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor();
    try (WebhookPublisher publisher =
            WebhookPublisher.builder(m -> urls.get(m.aggregateId()))
                .requestTimeout(Duration.ofMillis(500))
                .build();
        OutboxRelay relay =
            OutboxRelay.builder()
                .name("secrets")
                .dataSource(db.dataSource())
                .schema(db.schema())
                .publisher(publisher)
                .executor(executor)
                .config(RelayConfig.builder().maxAttempts(1).build())
                .build()) {
      Eventually.await(
          "every event dead-lettered",
          Duration.ofSeconds(30),
          () -> {
            try {
              relay.runOnce();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException(e);
            }
            return drive.deadLetters().size() == urls.size();
          });
    } finally {
      release.countDown();
      root.detachAppender(logs);
      server.stop(0);
      executor.shutdownNow();
    }

    List<DeadLetter> dead =
        OutboxAdmin.builder()
            .dataSource(db.dataSource())
            .schema(db.schema())
            .build()
            .deadLetters(100, 0);
    assertThat(dead).hasSize(urls.size());
    assertThat(dead)
        .extracting(DeadLetter::aggregateId, d -> reasonKind(d.lastError()))
        .containsExactlyInAnyOrder(
            org.assertj.core.groups.Tuple.tuple("http-500", "HTTP 500"),
            org.assertj.core.groups.Tuple.tuple("refused", "I/O error"),
            org.assertj.core.groups.Tuple.tuple("timeout", "timed out"),
            org.assertj.core.groups.Tuple.tuple("user-info", "I/O error"));
    assertThat(dead)
        .allSatisfy(
            d ->
                assertThat(d.lastError())
                    .contains("?token=***&access_token=***&sig=***")
                    .contains("http://"));
    assertThat(dead.stream().filter(d -> d.aggregateId().equals("user-info")).findFirst())
        .hasValueSatisfying(d -> assertThat(d.lastError()).contains("http://***@127.0.0.1:"));

    String stored =
        db.queryString(
            "SELECT string_agg(last_error, E'\\n') FROM " + db.schema() + ".outbox_events");
    assertThat(stored).contains("***");
    List<String> lines =
        logs.list.stream().map(e -> e.getFormattedMessage() + " " + e.getKeyValuePairs()).toList();
    assertThat(lines).as("the relay logged the dead letters").hasSizeGreaterThanOrEqualTo(4);
    for (String secret : SECRETS) {
      assertThat(stored).as("last_error").doesNotContain(secret);
      assertThat(lines).as("the log").noneSatisfy(l -> assertThat(l).contains(secret));
      assertThat(dead)
          .as("dead letters")
          .noneSatisfy(d -> assertThat(d.toString()).contains(secret));
    }
  }

  private static String reasonKind(String lastError) {
    for (String kind : List.of("HTTP 500", "I/O error", "timed out")) {
      if (lastError.contains(kind)) {
        return kind;
      }
    }
    return lastError;
  }
}
