package dev.pgoutbox.relay.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.consumer.NatsEventIds;
import dev.pgoutbox.db.testing.Eventually;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.brokers.Drain;
import dev.pgoutbox.relay.brokers.NatsServer;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.TestEvents;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link NatsPublisher} against the machine's NATS with JetStream (127.0.0.1:4222), and against a
 * nats-server of the test's own for the outage.
 */
class NatsPublisherIT {

  static final String URL =
      System.getenv().getOrDefault("PGOUTBOX_TEST_NATS_URL", "nats://127.0.0.1:4222");

  static Connection admin;

  @BeforeAll
  static void connect() throws Exception {
    admin = Nats.connect(options(URL));
  }

  @AfterAll
  static void disconnect() throws Exception {
    admin.close();
  }

  static Options options(String url) {
    return new Options.Builder()
        .server(url)
        .maxReconnects(-1)
        .reconnectWait(Duration.ofMillis(100))
        .connectionTimeout(Duration.ofSeconds(2))
        .build();
  }

  /** A stream capturing {@code <prefix>.>}; returns the prefix. */
  static String stream(Connection connection, StorageType storage, int maxMsgSize)
      throws Exception {
    String prefix = "pgoutbox-test-" + UUID.randomUUID().toString().substring(0, 8);
    JetStreamManagement jsm = connection.jetStreamManagement();
    jsm.addStream(
        StreamConfiguration.builder()
            .name(prefix)
            .subjects(prefix + ".>")
            .storageType(storage)
            .maximumMessageSize(maxMsgSize)
            .duplicateWindow(Duration.ofMinutes(2))
            .build());
    return prefix;
  }

  static void deleteStream(Connection connection, String name) throws Exception {
    connection.jetStreamManagement().deleteStream(name);
  }

  @Test
  void deliversTenThousandEventsOverAThousandAggregatesInOrderWithIdsAndHeaders() throws Exception {
    String prefix = stream(admin, StorageType.File, -1);
    try {
      TestEvents events = TestEvents.of("order", 1000, 10, 500);
      try (NatsPublisher publisher =
          NatsPublisher.builder(options(URL)).routing(NatsRouting.byTypes(prefix)).build()) {
        Drain drain = new Drain().all(publisher, events.batches(), Duration.ofMinutes(2));
        // Retryable answers are legitimate on a loaded machine (e.g. a request timeout and the
        // producer's retry); what matters is checked below: nothing lost, order intact.
        System.out.println(
            "retryable answers: "
                + drain.retryable()
                + " "
                + drain.reasons().stream().limit(3).toList());
      }
      OrderChecker checker = events.checker();
      consume(admin, prefix, events.size(), checker);
      checker.assertComplete();
    } finally {
      deleteStream(admin, prefix);
    }
  }

  @Test
  void serverDownAnswersRetryableAndEverythingIsDeliveredAfterItRestarts() throws Exception {
    try (NatsServer server = NatsServer.start()) {
      String prefix;
      Connection setup = Nats.connect(options(server.url()));
      try {
        prefix = stream(setup, StorageType.File, -1);
      } finally {
        setup.close();
      }
      TestEvents events = TestEvents.of("outage", 100, 6, 200);
      List<List<OutboxMessage>> batches = events.batches();
      try (NatsPublisher publisher =
          NatsPublisher.builder(options(server.url()))
              .routing(NatsRouting.byTypes(prefix))
              .ackTimeout(Duration.ofSeconds(2))
              .build()) {
        new Drain().all(publisher, batches.subList(0, 1), Duration.ofMinutes(1));

        server.stop();
        List<PublishResult> whileDown =
            publisher.publish(batches.get(1)).toCompletableFuture().get(1, TimeUnit.MINUTES);
        assertThat(whileDown)
            .hasSize(batches.get(1).size())
            .allSatisfy(
                r ->
                    assertThat(r)
                        .isInstanceOfSatisfying(
                            PublishResult.Retryable.class,
                            rt -> assertThat(rt.reason()).contains(prefix + ".outage")));

        server.restart();
        new Drain().all(publisher, batches.subList(1, batches.size()), Duration.ofMinutes(2));
      }
      Connection check = Nats.connect(options(server.url()));
      try {
        OrderChecker checker = events.checker();
        consume(check, prefix, events.size(), checker);
        checker.assertComplete();
        assertThat(check.jetStreamManagement().getStreamInfo(prefix).getStreamState().getMsgCount())
            .as("messages stored once each: Nats-Msg-Id dropped the republished ones")
            .isEqualTo(events.size());
      } finally {
        check.close();
      }
    }
  }

  @Test
  void aRepublishedEventIsAcknowledgedAndStoredOnce() throws Exception {
    String prefix = stream(admin, StorageType.Memory, -1);
    try (NatsPublisher publisher =
        NatsPublisher.builder(admin).routing(NatsRouting.byTypes(prefix)).build()) {
      OutboxMessage m = TestEvents.one("order", "a-1", 1, "{}");
      assertThat(publisher.publish(List.of(m)).toCompletableFuture().get(1, TimeUnit.MINUTES))
          .containsExactly(PublishResult.published());
      assertThat(publisher.publish(List.of(m)).toCompletableFuture().get(1, TimeUnit.MINUTES))
          .containsExactly(PublishResult.published());
      assertThat(admin.jetStreamManagement().getStreamInfo(prefix).getStreamState().getMsgCount())
          .isEqualTo(1);
    } finally {
      deleteStream(admin, prefix);
    }
    assertThat(admin.getStatus())
        .as("the host's connection is left open")
        .isEqualTo(Connection.Status.CONNECTED);
  }

  @Test
  void tooLargeForTheServerIsPermanentAndHoldsBackOnlyItsAggregate() throws Exception {
    String prefix = stream(admin, StorageType.Memory, -1);
    OutboxMessage huge =
        TestEvents.one("big", "a-1", 1, "\"" + "x".repeat((int) admin.getMaxPayload() + 1) + "\"");
    OutboxMessage after = TestEvents.one("big", "a-1", 2, "{}");
    OutboxMessage other = TestEvents.one("big", "a-2", 1, "{}");
    try (NatsPublisher publisher =
        NatsPublisher.builder(admin).routing(NatsRouting.byTypes(prefix)).build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(huge, after, other))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p ->
                  assertThat(p.reason())
                      .contains(prefix + ".big.big.step")
                      .contains("payload size"));
      assertThat(results.get(1))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r -> assertThat(r.reason()).startsWith("held back").contains(huge.id().toString()));
      assertThat(results.get(2)).isEqualTo(PublishResult.published());
    } finally {
      deleteStream(admin, prefix);
    }
  }

  @Test
  void tooLargeForTheStreamIsPermanent() throws Exception {
    String prefix = stream(admin, StorageType.Memory, 1024);
    OutboxMessage big = TestEvents.one("big", "a-1", 1, "\"" + "x".repeat(4096) + "\"");
    try (NatsPublisher publisher =
        NatsPublisher.builder(admin).routing(NatsRouting.byTypes(prefix)).build()) {
      List<PublishResult> results =
          publisher.publish(List.of(big)).toCompletableFuture().get(1, TimeUnit.MINUTES);
      assertThat(results.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p -> assertThat(p.reason()).contains("api error " + NatsPublisher.MESSAGE_TOO_LARGE));
    } finally {
      deleteStream(admin, prefix);
    }
  }

  @Test
  void noStreamForTheSubjectIsRetryableWithAReadableReason() throws Exception {
    try (NatsPublisher publisher =
        NatsPublisher.builder(admin)
            .routing(
                NatsRouting.byTypes(
                    "pgoutbox-nostream-" + UUID.randomUUID().toString().substring(0, 8)))
            .ackTimeout(Duration.ofSeconds(5))
            .build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(TestEvents.one("order", "a-1", 1, "{}")))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r -> assertThat(r.reason()).contains("pgoutbox-nostream-"));
    }
  }

  static void consume(Connection connection, String prefix, int expected, OrderChecker checker)
      throws Exception {
    JetStream js = connection.jetStream();
    JetStreamSubscription sub =
        js.subscribe(prefix + ".>", PushSubscribeOptions.builder().ordered(true).build());
    try {
      Eventually.await(
          expected + " events from stream " + prefix + " (have " + checker.distinct() + ")",
          Duration.ofMinutes(2),
          () -> {
            try {
              Message msg = sub.nextMessage(Duration.ofMillis(500));
              while (msg != null) {
                assertThat(msg.getHeaders().getFirst(NatsPublisher.EVENT_TYPE_HEADER))
                    .endsWith(".step");
                checker.received(
                    NatsEventIds.eventId(msg),
                    msg.getHeaders().getFirst(NatsPublisher.AGGREGATE_ID_HEADER),
                    new String(msg.getData(), StandardCharsets.UTF_8),
                    msg.getHeaders().getFirst("traceparent"));
                msg =
                    checker.distinct() >= expected ? null : sub.nextMessage(Duration.ofMillis(100));
              }
              return checker.distinct() >= expected;
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException(e);
            }
          });
    } finally {
      sub.unsubscribe();
    }
  }
}
