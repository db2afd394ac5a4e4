package dev.pgoutbox.relay.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.core.consumer.StandardWebhooks;
import dev.pgoutbox.core.consumer.WebhookEventIds;
import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.brokers.Drain;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.PublisherContract;
import dev.pgoutbox.relay.brokers.TestEvents;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WebhookPublisher} against a real HTTP server (the JDK's, on loopback): the publisher
 * contract (requests signed, one request per aggregate at a time), and what only HTTP does
 * (statuses, {@code Retry-After}, timeouts, cancellation).
 */
class WebhookPublisherIT extends PublisherContract {

  static final String SECRET =
      "whsec_"
          + Base64.getEncoder()
              .encodeToString("the contract's key, of 32 bytes".getBytes(StandardCharsets.UTF_8));

  static final StandardWebhooks.Verifier VERIFIER = StandardWebhooks.verifier(List.of(SECRET));

  /** What the receiver answers: a status and optional headers/body. */
  interface Answer {
    int status(HttpExchange exchange, byte[] body) throws IOException;
  }

  HttpServer server;
  ExecutorService executor;
  volatile Answer answer = (e, b) -> 204;
  final List<String> problems = Collections.synchronizedList(new ArrayList<>());
  final Set<String> inFlight = ConcurrentHashMap.newKeySet();
  final AtomicInteger maxInFlight = new AtomicInteger();
  final List<String> received = Collections.synchronizedList(new ArrayList<>());

  @BeforeEach
  void startServer() throws IOException {
    executor = Executors.newVirtualThreadPerTaskExecutor();
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 200);
    server.setExecutor(executor);
    server.createContext(
        "/events",
        exchange -> {
          byte[] body = exchange.getRequestBody().readAllBytes();
          String aggregate =
              exchange.getRequestHeaders().getFirst(WebhookPublisher.AGGREGATE_ID_HEADER);
          if (!inFlight.add(aggregate)) {
            problems.add("two requests of aggregate " + aggregate + " at once");
          }
          maxInFlight.accumulateAndGet(inFlight.size(), Math::max);
          int status;
          try {
            received.add(aggregate + "#" + exchange.getRequestHeaders().getFirst("seq"));
            status = answer.status(exchange, body);
          } finally {
            // Before the answer leaves: once the client has it, it may send the aggregate's next.
            inFlight.remove(aggregate);
          }
          if (status > 0) { // else the answer sent its own response
            exchange.sendResponseHeaders(status, -1);
          }
          exchange.close();
        });
    server.start();
  }

  @AfterEach
  void stopServer() {
    server.stop(0);
    executor.shutdownNow();
  }

  URI endpoint() {
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/events");
  }

  /**
   * The receiver checks each request's signature and headers and records it; it answers 422 with a
   * reason to a body that asks to be refused, and 503 during an outage.
   */
  @Override
  protected Destination destination(String aggregateType) {
    List<String[]> requests = Collections.synchronizedList(new ArrayList<>());
    Answer recording =
        (exchange, body) -> {
          var h = exchange.getRequestHeaders();
          if (!VERIFIER.isValid(h, body)) {
            problems.add("bad signature " + h.getFirst(StandardWebhooks.SIGNATURE_HEADER));
            return 401;
          }
          if (!"application/json".equals(h.getFirst("Content-Type"))
              || !(aggregateType + ".step").equals(h.getFirst(WebhookPublisher.EVENT_TYPE_HEADER))
              || !aggregateType.equals(h.getFirst(WebhookPublisher.AGGREGATE_TYPE_HEADER))) {
            problems.add("headers " + h.entrySet());
          }
          String text = new String(body, StandardCharsets.UTF_8);
          if (text.contains(REFUSE)) {
            byte[] reply = "amount is missing".getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(422, reply.length);
            exchange.getResponseBody().write(reply);
            return -1;
          }
          requests.add(
              new String[] {
                WebhookEventIds.eventId(h).toString(),
                h.getFirst(WebhookPublisher.AGGREGATE_ID_HEADER),
                text,
                h.getFirst("traceparent")
              });
          return 200;
        };
    answer = recording;
    return new Destination() {
      @Override
      public Publisher publisher() {
        return WebhookPublisher.builder(endpoint())
            .standardWebhooksSecret(SECRET)
            .maxConcurrency(32)
            .build();
      }

      @Override
      public void readBack(OrderChecker checker, int expected) {
        assertThat(problems).isEmpty();
        synchronized (requests) {
          for (String[] r : requests) {
            checker.received(UUID.fromString(r[0]), r[1], r[2], r[3]);
          }
        }
      }

      @Override
      public void beginOutage() {
        answer = (exchange, body) -> 503;
      }

      @Override
      public void endOutage() {
        answer = recording;
      }

      @Override
      public List<String> outageReasons() {
        return List.of("HTTP 503");
      }
    };
  }

  /** The same receiver: an outage is a 503 for every request until it ends. */
  @Override
  protected Destination destinationWithOutage(String aggregateType) {
    return destination(aggregateType);
  }

  /** A body the receiver answers 422 with a reason. */
  @Override
  protected Refused refused(Destination to, String aggregateType, String aggregateId) {
    return new Refused(
        TestEvents.one(aggregateType, aggregateId, 1, "{\"" + REFUSE + "\":true}"),
        List.of("HTTP 422", "amount is missing", "/events"));
  }

  private static final String REFUSE = "refuse-me";

  @Test
  void serviceUnavailableIsRetryableWithRetryAfterAndHoldsBackTheAggregateUntilItRecovers()
      throws Exception {
    TestEvents events = TestEvents.of("order", 20, 5, 100); // one batch, 5 events per aggregate
    List<OutboxMessage> batch = events.batches().get(0);
    answer =
        (exchange, body) -> {
          exchange.getResponseHeaders().add("Retry-After", "7");
          return 503;
        };
    try (WebhookPublisher publisher = WebhookPublisher.builder(endpoint()).build()) {
      List<PublishResult> whileDown =
          publisher.publish(batch).toCompletableFuture().get(1, TimeUnit.MINUTES);
      for (int i = 0; i < batch.size(); i++) {
        boolean first = batch.get(i).headers().get("seq").equals("1");
        PublishResult r = whileDown.get(i);
        assertThat(r).isInstanceOf(PublishResult.Retryable.class);
        PublishResult.Retryable rt = (PublishResult.Retryable) r;
        if (first) {
          assertThat(rt.reason()).contains("HTTP 503");
          assertThat(rt.retryAfter()).isEqualTo(Duration.ofSeconds(7));
        } else {
          assertThat(rt.reason()).startsWith("held back: an earlier event of aggregate");
          assertThat(rt.retryAfter()).isNull();
        }
      }
      assertThat(received)
          .as("only the first event of each aggregate was sent")
          .hasSize(20)
          .allMatch(s -> s.endsWith("#1"));

      OrderChecker checker = events.checker();
      answer =
          (exchange, body) -> {
            checker.received(
                WebhookEventIds.eventId(exchange.getRequestHeaders()),
                exchange.getRequestHeaders().getFirst(WebhookPublisher.AGGREGATE_ID_HEADER),
                new String(body, StandardCharsets.UTF_8),
                exchange.getRequestHeaders().getFirst("traceparent"));
            return 202;
          };
      new Drain().all(publisher, List.of(batch), Duration.ofMinutes(1));
      checker.assertComplete();
    }
    assertThat(problems).isEmpty();
  }

  /**
   * The receiver holds each of the first two requests until both have arrived: only a publisher
   * that sends different aggregates' requests at once gets past it (one at a time, the first would
   * wait out the 10 s and the two would never overlap).
   */
  @Test
  void requestsOfDifferentAggregatesAreInFlightAtOnce() throws Exception {
    List<OutboxMessage> batch = TestEvents.of("order", 4, 1, 100).batches().get(0);
    CountDownLatch twoArrived = new CountDownLatch(2);
    answer =
        (exchange, body) -> {
          twoArrived.countDown();
          try {
            return twoArrived.await(10, TimeUnit.SECONDS) ? 200 : 504;
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 500;
          }
        };
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(endpoint()).maxConcurrency(32).build()) {
      List<PublishResult> results =
          publisher.publish(batch).toCompletableFuture().get(1, TimeUnit.MINUTES);
      assertThat(results).allSatisfy(r -> assertThat(r).isEqualTo(PublishResult.published()));
    }
    assertThat(maxInFlight.get()).as("requests in flight at once").isGreaterThanOrEqualTo(2);
    assertThat(problems).isEmpty();
  }

  @Test
  void tooManyRequestsHonoursAnHttpDateRetryAfter() throws Exception {
    Instant now = Instant.parse("2026-01-01T10:00:00Z");
    answer =
        (exchange, body) -> {
          exchange
              .getResponseHeaders()
              .add(
                  "Retry-After",
                  DateTimeFormatter.RFC_1123_DATE_TIME.format(
                      now.plusSeconds(90).atOffset(ZoneOffset.UTC)));
          return 429;
        };
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(endpoint()).clock(Clock.fixed(now, ZoneOffset.UTC)).build()) {
      PublishResult r =
          publisher
              .publish(List.of(TestEvents.one("order", "a-1", 1, "{}")))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES)
              .get(0);
      assertThat(r)
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              rt -> {
                assertThat(rt.reason()).contains("HTTP 429");
                assertThat(rt.retryAfter()).isEqualTo(Duration.ofSeconds(90));
              });
    }
  }

  @Test
  void aReceiverThatDoesNotAnswerInTimeIsRetryable() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    answer =
        (exchange, body) -> {
          try {
            release.await(1, TimeUnit.MINUTES);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return 200;
        };
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(endpoint()).requestTimeout(Duration.ofMillis(300)).build()) {
      PublishResult r =
          publisher
              .publish(List.of(TestEvents.one("order", "a-1", 1, "{}")))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES)
              .get(0);
      assertThat(r)
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class, rt -> assertThat(rt.reason()).contains("timed out"));
    } finally {
      release.countDown();
    }
  }

  @Test
  void cancellingThePublishStopsTheChainAndCancelsTheRequestInFlight() throws Exception {
    CountDownLatch entered = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch answered = new CountDownLatch(1);
    answer =
        (exchange, body) -> {
          if ("a-1"
              .equals(
                  exchange.getRequestHeaders().getFirst(WebhookPublisher.AGGREGATE_ID_HEADER))) {
            entered.countDown();
            try {
              release.await(1, TimeUnit.MINUTES);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            answered.countDown();
          }
          return 204;
        };
    try (WebhookPublisher publisher = WebhookPublisher.builder(endpoint()).build()) {
      CompletableFuture<List<PublishResult>> run =
          publisher
              .publish(
                  List.of(
                      TestEvents.one("order", "a-1", 1, "{}"),
                      TestEvents.one("order", "a-1", 2, "{}"),
                      TestEvents.one("order", "a-1", 3, "{}")))
              .toCompletableFuture();
      assertThat(entered.await(1, TimeUnit.MINUTES)).isTrue();

      assertThat(run.cancel(true)).isTrue();
      assertThat(((AggregateSequencer.Run) run).answeredSoFar()).containsOnlyNulls();
      release.countDown();
      assertThat(answered.await(1, TimeUnit.MINUTES)).isTrue();

      // A later batch on the same publisher goes through; a-1#2 was never sent.
      assertThat(
              publisher
                  .publish(List.of(TestEvents.one("order", "b-1", 1, "{}")))
                  .toCompletableFuture()
                  .get(1, TimeUnit.MINUTES))
          .containsExactly(PublishResult.published());
      assertThat(received).containsExactly("a-1#1", "b-1#1");
      assertThat(run).isCancelled();
    }
  }

  @Test
  void nothingListeningIsRetryable() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(URI.create("http://127.0.0.1:" + closedPort + "/events"))
            .build()) {
      PublishResult r =
          publisher
              .publish(List.of(TestEvents.one("order", "a-1", 1, "{}")))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES)
              .get(0);
      assertThat(r)
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class, rt -> assertThat(rt.reason()).contains("I/O error"));
    }
  }

  @Test
  void plainHttpGoesOutAsHttp11WithoutAnH2cUpgradeUnlessAllowed() throws Exception {
    List<String> seen = Collections.synchronizedList(new ArrayList<>());
    answer =
        (exchange, body) -> {
          var h = exchange.getRequestHeaders();
          seen.add(
              exchange.getProtocol()
                  + " upgrade="
                  + h.getFirst("Upgrade")
                  + " settings="
                  + (h.getFirst("HTTP2-Settings") != null));
          return 204;
        };
    try (WebhookPublisher publisher = WebhookPublisher.builder(endpoint()).build()) {
      assertThat(publishOne(publisher)).isEqualTo(PublishResult.published());
    }
    assertThat(seen).containsExactly("HTTP/1.1 upgrade=null settings=false");

    // What some proxies mishandle, and what the default avoids: the JDK client's h2c upgrade.
    seen.clear();
    try (WebhookPublisher publisher =
        WebhookPublisher.builder(endpoint()).cleartextHttp2(true).build()) {
      assertThat(publishOne(publisher)).isEqualTo(PublishResult.published());
    }
    assertThat(seen).containsExactly("HTTP/1.1 upgrade=h2c settings=true");
  }

  private static PublishResult publishOne(WebhookPublisher publisher) throws Exception {
    return publisher
        .publish(List.of(TestEvents.one("order", "a-1", 1, "{}")))
        .toCompletableFuture()
        .get(1, TimeUnit.MINUTES)
        .get(0);
  }
}
