package dev.pgoutbox.relay.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.core.consumer.WebhookSignature;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.brokers.RelayDrive;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.testing.TestSchema;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Standard Webhooks signatures from the real relay to a JDK HTTP server that verifies them as a
 * receiver would: every attempt signed afresh, replays and tampering refused, keys rotated.
 */
class StandardWebhooksIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  static final String SECRET = secret("the receiver's current key, 32 b");
  static final String OLD_SECRET = secret("the receiver's previous key, 32b");

  record Received(Headers headers, byte[] body, boolean verified) {}

  @Test
  void everyAttemptIsSignedAndVerifiesWhileAReplayOrATamperedBodyDoesNot() throws Exception {
    StandardWebhooks.Verifier verifier = StandardWebhooks.verifier(List.of(OLD_SECRET, SECRET));
    ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    AtomicInteger calls = new AtomicInteger();
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/events",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          boolean ok = verifier.isValid(exchange.getRequestHeaders(), body);
          received.add(new Received(exchange.getRequestHeaders(), body, ok));
          // Verified, but the first delivery is answered 503: the relay retries it.
          exchange.sendResponseHeaders(!ok ? 401 : calls.incrementAndGet() == 1 ? 503 : 204, -1);
          exchange.close();
        });
    server.start();
    OutboxMessage event = TestEvents.one("order", "a-1", 1, "{\"id\":1}");
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events"))
            .standardWebhooksSecret(SECRET)
            .build()) {
      RelayDrive drive = new RelayDrive(db).truncate().write(List.of(event));
      drive.drain(publisher, 1, 10, Duration.ofMinutes(1));
      drive.assertAllPublishedBut(0);
    } finally {
      server.stop(0);
    }

    List<Received> requests = List.copyOf(received);
    assertThat(requests).hasSize(2).allSatisfy(r -> assertThat(r.verified()).isTrue());
    Received first = requests.get(0);
    assertThat(first.headers().getFirst("webhook-id")).isEqualTo(event.id().toString());
    assertThat(first.headers().getFirst("webhook-signature")).startsWith("v1,");
    assertThat(requests.get(1).headers().getFirst("webhook-id")).isEqualTo(event.id().toString());

    // The same request replayed 6 minutes later, or with its body changed, is refused.
    long signedAt = Long.parseLong(first.headers().getFirst("webhook-timestamp"));
    StandardWebhooks.Verifier later =
        StandardWebhooks.builder()
            .secret(SECRET)
            .clock(Clock.fixed(Instant.ofEpochSecond(signedAt).plusSeconds(360), ZoneOffset.UTC))
            .build();
    assertThatThrownBy(() -> later.verify(first.headers(), first.body()))
        .isInstanceOf(StandardWebhooks.WebhookVerificationException.class)
        .hasMessageContaining("tolerance");
    byte[] tampered = "{\"id\":2}".getBytes(StandardCharsets.UTF_8);
    assertThatThrownBy(() -> verifier.verify(first.headers(), tampered))
        .isInstanceOf(StandardWebhooks.WebhookVerificationException.class)
        .hasMessageContaining("no v1 signature");
    // A receiver that only knows another key refuses it too.
    assertThat(
            StandardWebhooks.verifier(List.of(OLD_SECRET)).isValid(first.headers(), first.body()))
        .isFalse();
  }

  /**
   * A request of the publisher as documented (Standard Webhooks, nothing else) verifies with
   * pgoutbox's verifier and with the standard's own library; the same request replayed with another
   * id, another timestamp or another dedup key does not. The deprecated body-only header is not
   * sent, and a request signed with it would pass all three replays.
   */
  @Test
  @SuppressWarnings("deprecation") // WebhookSignature, to show what it lets through
  void aCapturedRequestReplayedUnderAnotherIdTimestampOrKeyFailsVerification() throws Exception {
    ConcurrentLinkedQueue<Received> received = new ConcurrentLinkedQueue<>();
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/events",
        exchange -> {
          received.add(
              new Received(
                  exchange.getRequestHeaders(), exchange.getRequestBody().readAllBytes(), true));
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    server.start();
    OutboxMessage event = TestEvents.one("order", "a-1", 1, "{\"amount\":100}");
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events"))
            .standardWebhooksSecret(SECRET)
            .build()) {
      assertThat(publisher.publish(List.of(event)).toCompletableFuture().get(1, TimeUnit.MINUTES))
          .containsExactly(PublishResult.published());
    } finally {
      server.stop(0);
    }
    Received captured = received.remove();
    Map<String, List<String>> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    headers.putAll(captured.headers());
    assertThat(headers).doesNotContainKey(WebhookSignature.HEADER);
    StandardWebhooks.Verifier ours = StandardWebhooks.verifier(List.of(SECRET));
    com.standardwebhooks.Webhook oracle = new com.standardwebhooks.Webhook(SECRET);
    String body = new String(captured.body(), StandardCharsets.UTF_8);

    assertThat(ours.isValid(headers, captured.body())).as("the request as sent").isTrue();
    oracle.verify(body, lowerCase(headers));

    long signedAt = Long.parseLong(headers.get("webhook-timestamp").get(0));
    Map<String, Map<String, List<String>>> replays =
        Map.of(
            "another webhook-id",
            with(headers, "webhook-id", UUID.randomUUID().toString()),
            "another webhook-timestamp",
            with(headers, "webhook-timestamp", Long.toString(signedAt + 1)),
            "another Idempotency-Key",
            with(headers, WebhookEventIds.HEADER, UUID.randomUUID().toString()));
    replays.forEach(
        (what, replay) -> {
          assertThat(ours.isValid(replay, captured.body())).as(what).isFalse();
          if (!what.contains("Idempotency-Key")) { // the standard's library knows only its own
            assertThatThrownBy(() -> oracle.verify(body, lowerCase(replay)))
                .as(what + ", by the Standard Webhooks library")
                .isInstanceOf(com.standardwebhooks.exceptions.WebhookVerificationException.class);
          }
        });

    // What the deprecated header lets through: its signature of the body alone, on the replays.
    byte[] legacyKey = "legacy".getBytes(StandardCharsets.UTF_8);
    String legacy = WebhookSignature.sign(legacyKey, captured.body());
    replays.forEach(
        (what, replay) ->
            assertThat(WebhookSignature.verify(legacyKey, captured.body(), legacy))
                .as("X-Pgoutbox-Signature on a replay with " + what)
                .isTrue());
  }

  private static Map<String, List<String>> with(
      Map<String, List<String>> headers, String name, String value) {
    Map<String, List<String>> copy = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
    copy.putAll(headers);
    copy.put(name, List.of(value));
    return copy;
  }

  /** The standard's library looks its headers up in lower case. */
  private static Map<String, List<String>> lowerCase(Map<String, List<String>> headers) {
    Map<String, List<String>> lower = new java.util.HashMap<>();
    headers.forEach((k, v) -> lower.put(k.toLowerCase(java.util.Locale.ROOT), v));
    return lower;
  }

  @Test
  void aSecretThatIsNotAStandardWebhooksKeyIsRefusedWhenBuilding() {
    WebhookPublisher.Builder builder = WebhookPublisher.builder(URI.create("http://127.0.0.1:1/x"));
    assertThatThrownBy(() -> builder.standardWebhooksSecret("whsec_dG9vIHNob3J0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("secret must decode to between 24 and 64 bytes, was 9");
  }

  private static String secret(String key) {
    return "whsec_" + Base64.getEncoder().encodeToString(key.getBytes(StandardCharsets.UTF_8));
  }
}
