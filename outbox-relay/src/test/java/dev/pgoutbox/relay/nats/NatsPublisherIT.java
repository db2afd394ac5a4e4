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
import java.util.List;
import java.util.UUID;
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
