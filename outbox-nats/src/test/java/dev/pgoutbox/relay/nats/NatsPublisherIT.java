package dev.pgoutbox.relay.nats;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.consumer.NatsEventIds;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.PublisherContract;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.NatsServer;
import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamOptions;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link NatsPublisher} against a real NATS JetStream (the machine's, and one of the test's own for
 * the outage): the publisher contract, and what only NATS does (dedup by {@code Nats-Msg-Id},
 * stream limits, no stream for a subject).
 */
class NatsPublisherIT extends PublisherContract {

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

  /** A stream capturing {@code <prefix>.>} on the server at {@code url}, deleted at the end. */
  private static final class Stream implements Destination {
    final @Nullable NatsServer server;
    final String url;
    final Connection connection;
    final String prefix;

    Stream(@Nullable NatsServer server) throws Exception {
      this.server = server;
      this.url = server == null ? URL : server.url();
      this.connection = server == null ? admin : Nats.connect(options(url));
      this.prefix = stream(connection, StorageType.File, -1);
    }

    @Override
    public Publisher publisher() {
      NatsPublisher.Builder builder = NatsPublisher.builder(options(url));
      if (server != null) {
        builder.ackTimeout(Duration.ofSeconds(2)); // the outage: give up on an ack soon
      }
      return builder.routing(NatsRouting.byTypes(prefix)).build();
    }

    @Override
    public void readBack(OrderChecker checker, int expected) throws Exception {
      if (server == null) {
        consume(connection, prefix, expected, checker);
        return;
      }
      // Read back on a connection opened after the outage: the one that lived through it timed
      // out on JetStream requests for a minute in three runs seen on 2026-12-01, while the
      // publisher's own reconnected connection had just stored every event.
      Connection reader = Nats.connect(options(url));
      try {
        consume(reader, prefix, expected, checker);
        assertThat(
                reader.jetStreamManagement().getStreamInfo(prefix).getStreamState().getMsgCount())
            .as("messages stored once each: Nats-Msg-Id dropped the republished ones")
            .isEqualTo(expected);
      } finally {
        reader.close();
      }
    }

    @Override
    public void beginOutage() {
      requireServer().stop();
    }

    @Override
    public void endOutage() {
      requireServer().restart();
    }

    @Override
    public List<String> outageReasons() {
      return List.of(prefix + ".outage");
    }

    private NatsServer requireServer() {
      if (server == null) {
        throw new UnsupportedOperationException("no outage on the shared server");
      }
      return server;
    }

    @Override
    public void close() {
      try {
        if (server == null) {
          deleteStream(connection, prefix);
        } else {
          connection.close();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (Exception e) {
        throw new IllegalStateException("cleaning up stream " + prefix, e);
      } finally {
        if (server != null) {
          server.close();
        }
      }
    }
  }

  @Override
  protected Destination destination(String aggregateType) throws Exception {
    return new Stream(null);
  }

  /** A nats-server of the test's own, stopped and restarted on the same store. */
  @Override
  protected Destination destinationWithOutage(String aggregateType) throws Exception {
    return new Stream(NatsServer.start());
  }

  /** A message larger than the server's max_payload. */
  @Override
  protected Refused refused(Destination to, String aggregateType, String aggregateId) {
    String payload = "\"" + "x".repeat((int) admin.getMaxPayload() + 1) + "\"";
    return new Refused(
        TestEvents.one(aggregateType, aggregateId, 1, payload),
        List.of(((Stream) to).prefix + "." + aggregateType, "payload size"));
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

  private static OutboxMessage typed(String aggregateType, String aggregateId, String eventType) {
    return new OutboxMessage(
        UUID.randomUUID(),
        1,
        aggregateType,
        aggregateId,
        eventType,
        "{}",
        Map.of(),
        1,
        Instant.now());
  }

  /** The subject JetStream stored each event under, by event id. */
  private static Map<UUID, String> storedSubjects(String prefix, int expected) throws Exception {
    Map<UUID, String> subjects = new HashMap<>();
    JetStreamSubscription sub =
        admin
            .jetStream()
            .subscribe(prefix + ".>", PushSubscribeOptions.builder().ordered(true).build());
    try {
      Eventually.await(
          expected + " messages in stream " + prefix,
          Duration.ofMinutes(1),
          () -> {
            try {
              Message msg = sub.nextMessage(Duration.ofMillis(200));
              while (msg != null) {
                subjects.put(NatsEventIds.eventId(msg), msg.getSubject());
                msg = sub.nextMessage(Duration.ofMillis(50));
              }
              return subjects.size() >= expected;
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException(e);
            }
          });
    } finally {
      sub.unsubscribe();
    }
    assertThat(admin.jetStreamManagement().getStreamInfo(prefix).getStreamState().getMsgCount())
        .isEqualTo(expected);
    return subjects;
  }

  @Test
  void typesThatWouldShareASubjectLandInDistinctSubjects() throws Exception {
    String prefix = stream(admin, StorageType.Memory, -1);
    // Pairs the old mapping (types joined with dots, wildcards and whitespace made '_') sent to
    // one subject: a.b + c / a + b.c, x + * / x + _, x y + z / x_y + z.
    List<OutboxMessage> batch =
        List.of(
            typed("a.b", "1", "c"),
            typed("a", "2", "b.c"),
            typed("x", "3", "*"),
            typed("x", "4", "_"),
            typed("x", "5", ">"),
            typed("x y", "6", "z"),
            typed("x_y", "7", "z"),
            typed("order", "8", "order.created"));
    try (NatsPublisher publisher =
        NatsPublisher.builder(admin).routing(NatsRouting.byTypes(prefix)).build()) {
      assertThat(publisher.publish(batch).toCompletableFuture().get(1, TimeUnit.MINUTES))
          .containsOnly(PublishResult.published());
      Map<UUID, String> subjects = storedSubjects(prefix, batch.size());
      assertThat(new HashSet<>(subjects.values())).hasSize(batch.size());
      assertThat(subjects.values())
          .allSatisfy(subject -> assertThat(subject).doesNotContain("*", ">", " "));
      assertThat(subjects.get(batch.get(1).id())).isEqualTo(prefix + ".a.b.c");
      assertThat(subjects.get(batch.get(7).id()))
          .as("an unambiguous subject is what it always was")
          .isEqualTo(prefix + ".order.order.created");
      // A consumer of aggregate type a (filter <prefix>.a.>) sees only aggregate type a.
      assertThat(subjects.entrySet())
          .filteredOn(e -> e.getValue().startsWith(prefix + ".a."))
          .extracting(Map.Entry::getKey)
          .containsExactly(batch.get(1).id());
    } finally {
      deleteStream(admin, prefix);
    }
  }

  @Test
  void aRoutingsWildcardSubjectFailsOnlyItsEventAndNeverReachesTheServer() throws Exception {
    String prefix = stream(admin, StorageType.Memory, -1);
    // A core subscription sees every publish under the prefix, wildcard subjects included.
    Connection watcher = Nats.connect(options(URL));
    List<String> seen = new CopyOnWriteArrayList<>();
    CountDownLatch sentinel = new CountDownLatch(1);
    Dispatcher dispatcher =
        watcher.createDispatcher(
            msg -> {
              seen.add(msg.getSubject());
              if (msg.getSubject().equals(prefix + "-sentinel")) {
                sentinel.countDown();
              }
            });
    dispatcher.subscribe(prefix + ".>");
    dispatcher.subscribe(prefix + "-sentinel"); // outside the stream
    watcher.flush(Duration.ofSeconds(5));
    List<OutboxMessage> batch =
        List.of(
            typed("order", "ok-1", "order.created"),
            typed("order", "*", "order.created"),
            typed("order", ">", "order.created"),
            typed("order", "a\fb", "order.created"),
            typed("order", "a\u000bb", "order.created"),
            typed("order", "a b", "order.created"),
            typed("order", "a..b", "order.created"),
            typed("order", "ok-2", "order.created"));
    try (NatsPublisher publisher =
        NatsPublisher.builder(admin).routing(m -> prefix + "." + m.aggregateId()).build()) {
      List<PublishResult> results =
          publisher.publish(batch).toCompletableFuture().get(1, TimeUnit.MINUTES);
      assertThat(results.get(0)).isEqualTo(PublishResult.published());
      assertThat(results.get(7)).isEqualTo(PublishResult.published());
      assertThat(results.subList(1, 7))
          .allSatisfy(
              r ->
                  assertThat(r)
                      .isInstanceOfSatisfying(
                          PublishResult.Permanent.class,
                          p ->
                              assertThat(p.reason())
                                  .contains("subject '" + prefix + ".")
                                  .contains("not a literal subject")));
      assertThat(((PublishResult.Permanent) results.get(1)).reason()).contains("wildcard '*'");
      // Everything the publisher's connection sent reaches the watcher before this.
      admin.publish(prefix + "-sentinel", new byte[0]);
      assertThat(sentinel.await(1, TimeUnit.MINUTES)).isTrue();
      assertThat(seen)
          .containsExactlyInAnyOrder(prefix + ".ok-1", prefix + ".ok-2", prefix + "-sentinel");
      assertThat(storedSubjects(prefix, 2).values())
          .containsExactlyInAnyOrder(prefix + ".ok-1", prefix + ".ok-2");
    } finally {
      watcher.close();
      deleteStream(admin, prefix);
    }
  }

  static void consume(Connection connection, String prefix, int expected, OrderChecker checker)
      throws Exception {
    // After an outage the server may still be electing its JetStream leader: the consumer's
    // creation gets the time the delivery check gets, not the client's default 2 s.
    JetStream js =
        connection.jetStream(
            JetStreamOptions.builder().requestTimeout(Duration.ofMinutes(1)).build());
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
