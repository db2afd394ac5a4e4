package dev.pgoutbox.spring.boot;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.core.consumer.WebhookSignature;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.webhook.WebhookPublisher;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * {@code pgoutbox.publisher.type=webhook} in a Boot application: every event POSTed, signed, to
 * {@code pgoutbox.publisher.webhook.url}, here a real HTTP server in the test. Signed as Standard
 * Webhooks, the default, checked with pgoutbox's verifier and the standard's own library.
 */
@SpringBootTest(
    classes = WebhookPublisherBootIT.App.class,
    properties = {
      "pgoutbox.publisher.type=webhook",
      "pgoutbox.relay.name=boot-webhook",
      "pgoutbox.publisher.webhook.signing-secret=" + WebhookPublisherBootIT.SECRET
    })
@DirtiesContext
class WebhookPublisherBootIT {

  /** A Standard Webhooks secret: whsec_ and the base64 of 32 bytes. */
  static final String SECRET = "whsec_Ym9vdC1pdCBzZWNyZXQsIG9mIHRoaXJ0eS10d28gYnl0ZXM=";

  @RegisterExtension static final TestSchema db = TestSchema.empty();

  record Request(String path, Headers headers, byte[] body) {}

  static final BlockingQueue<Request> received = new LinkedBlockingQueue<>();
  static HttpServer receiver;

  @SpringBootConfiguration
  @EnableAutoConfiguration
  @Import(Orders.class)
  static class App {}

  @DynamicPropertySource
  static void properties(DynamicPropertyRegistry registry) {
    BootTests.database(registry, db);
    registry.add(
        "pgoutbox.publisher.webhook.url",
        () -> "http://127.0.0.1:" + receiver.getAddress().getPort() + "/events");
  }

  @BeforeAll
  static void receiver() throws Exception {
    db.execute(Orders.TABLE_DDL.formatted(db.schema()));
    receiver = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    receiver.createContext(
        "/events",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          received.add(
              new Request(exchange.getRequestURI().getPath(), exchange.getRequestHeaders(), body));
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    receiver.start();
  }

  @AfterAll
  static void stopTheRelayThenTheReceiver(@Autowired OutboxRelayLifecycle relay) {
    relay.stop(); // before the schema is dropped
    receiver.stop(0);
  }

  @Autowired Orders orders;
  @Autowired Publisher publisher;

  @Test
  void commitPostsTheEventSignedAsStandardWebhooksAndRollbackPostsNothing() throws Exception {
    assertThat(publisher).isInstanceOf(WebhookPublisher.class);

    assertThatThrownBy(() -> orders.place("w-rolled-back", true))
        .hasMessageContaining("payment refused");
    UUID committed = orders.place("w-committed", false);

    Request request = received.poll(30, TimeUnit.SECONDS);
    assertThat(request).as("the committed event, POSTed").isNotNull();
    assertThat(request.path()).isEqualTo("/events");
    assertThat(request.headers().getFirst(WebhookEventIds.HEADER)).isEqualTo(committed.toString());
    assertThat(new String(request.body(), UTF_8))
        .isEqualToIgnoringWhitespace("{\"id\":\"w-committed\"}");
    assertThat(request.headers().getFirst(StandardWebhooks.ID_HEADER))
        .isEqualTo(committed.toString());
    assertThat(request.headers().getFirst(StandardWebhooks.SIGNATURE_HEADER)).startsWith("v1,");
    assertThat(
            StandardWebhooks.verifier(List.of(SECRET)).isValid(request.headers(), request.body()))
        .as("signed as Standard Webhooks with pgoutbox.publisher.webhook.signing-secret")
        .isTrue();
    // The standard's own Java library agrees.
    new com.standardwebhooks.Webhook(SECRET)
        .verify(
            new String(request.body(), UTF_8),
            Map.of(
                "webhook-id", List.of(request.headers().getFirst("webhook-id")),
                "webhook-timestamp", List.of(request.headers().getFirst("webhook-timestamp")),
                "webhook-signature", List.of(request.headers().getFirst("webhook-signature"))));
    assertThat(request.headers().containsKey(WebhookSignature.HEADER))
        .as("the deprecated body-only signature, off unless legacy-signing-secret is set")
        .isFalse();

    Eventually.await(
        "the committed event marked processed",
        Duration.ofSeconds(15),
        () -> count("processed_at IS NULL") == 0);
    assertThat(count("aggregate_id = 'w-rolled-back'")).isZero();
    assertThat(received).as("nothing but the committed event").isEmpty();
  }

  private static long count(String where) {
    return db.queryLong("SELECT count(*) FROM " + db.schema() + ".outbox_events WHERE " + where);
  }
}
