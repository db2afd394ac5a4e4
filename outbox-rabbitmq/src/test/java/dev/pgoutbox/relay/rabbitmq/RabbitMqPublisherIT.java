package dev.pgoutbox.relay.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import dev.pgoutbox.core.consumer.RabbitMqEventIds;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.brokers.Drain;
import dev.pgoutbox.relay.brokers.OrderChecker;
import dev.pgoutbox.relay.brokers.PublisherContract;
import dev.pgoutbox.relay.brokers.TestEvents;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TcpProxy;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link RabbitMqPublisher} against the machine's RabbitMQ (127.0.0.1:5672, guest/guest): the
 * publisher contract, and what only RabbitMQ does (unroutable messages, nacks, closed channels).
 */
class RabbitMqPublisherIT extends PublisherContract {

  static final String HOST =
      System.getenv().getOrDefault("PGOUTBOX_TEST_RABBITMQ_HOST", "127.0.0.1");
  static final int PORT =
      Integer.parseInt(System.getenv().getOrDefault("PGOUTBOX_TEST_RABBITMQ_PORT", "5672"));

  static Connection admin;
  static Channel adminChannel;

  @BeforeAll
  static void connect() throws Exception {
    admin = factory(PORT).newConnection("pgoutbox-test-admin");
    adminChannel = admin.createChannel();
  }

  @AfterAll
  static void disconnect() throws Exception {
    admin.close();
  }

  static ConnectionFactory factory(int port) {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost(HOST);
    f.setPort(port);
    f.setUsername("guest");
    f.setPassword("guest");
    f.setConnectionTimeout(5_000);
    return f;
  }

  /** A topic exchange and one queue bound to all of it, both auto-deleted with the test. */
  static String[] exchangeWithQueue(String name) throws Exception {
    String exchange = "pgoutbox.test." + name + "." + UUID.randomUUID();
    adminChannel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, true, null);
    String queue = adminChannel.queueDeclare("", false, true, true, null).getQueue();
    adminChannel.queueBind(queue, exchange, "#");
    return new String[] {exchange, queue};
  }

  /** A topic exchange, routing key = event type, and a queue bound to the type's keys. */
  private static final class Exchange implements Destination {
    final String type;
    final String exchange = "pgoutbox.test.contract." + UUID.randomUUID();
    final String queue;
    final int port;
    final @Nullable TcpProxy proxy;

    Exchange(String type, @Nullable TcpProxy proxy) throws Exception {
      this.type = type;
      this.proxy = proxy;
      this.port = proxy == null ? PORT : proxy.port();
      adminChannel.exchangeDeclare(exchange, BuiltinExchangeType.TOPIC, false, true, null);
      queue = adminChannel.queueDeclare("", false, true, true, null).getQueue();
      adminChannel.queueBind(queue, exchange, type + ".#");
    }

    @Override
    public Publisher publisher() {
      RabbitMqPublisher.Builder builder =
          RabbitMqPublisher.builder(factory(port), RabbitMqRouting.byEventType(exchange));
      if (proxy != null) {
        builder.confirmTimeout(Duration.ofSeconds(5)); // the outage: give up on a confirm soon
      }
      return builder.build();
    }

    @Override
    public void readBack(OrderChecker checker, int expected) throws Exception {
      consume(queue, expected, checker, type);
    }

    @Override
    public void beginOutage() {
      requireProxy().cut(); // cuts the live connection and refuses new ones
    }

    @Override
    public void endOutage() {
      requireProxy().restore();
    }

    @Override
    public List<String> outageReasons() {
      return List.of("RabbitMQ unreachable", "channel closed");
    }

    private TcpProxy requireProxy() {
      if (proxy == null) {
        throw new UnsupportedOperationException("no outage without the proxy");
      }
      return proxy;
    }

    @Override
    public void close() {
      if (proxy != null) {
        proxy.close();
      }
    }
  }

  @Override
  protected Destination destination(String aggregateType) throws Exception {
    return new Exchange(aggregateType, null);
  }

  /** The broker behind a TCP proxy that cuts the connection and refuses new ones. */
  @Override
  protected Destination destinationWithOutage(String aggregateType) throws Exception {
    return new Exchange(aggregateType, TcpProxy.to(PORT));
  }

  /** An event whose routing key (its type) no queue is bound to: unroutable. */
  @Override
  protected Refused refused(Destination to, String aggregateType, String aggregateId) {
    return new Refused(
        withEventType(TestEvents.one(aggregateType, aggregateId, 1, "{}"), "nobody.step"),
        List.of("unroutable", ((Exchange) to).exchange, "nobody.step"));
  }

  @Test
  void nothingListeningIsRetryable() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(closedPort), RabbitMqRouting.byEventType("x")).build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(TestEvents.one("order", "a-1", 1, "{}")))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r ->
                  assertThat(r.reason())
                      .startsWith("RabbitMQ unreachable")
                      .contains("Connection refused"));
    }
  }

  @Test
  void unroutableMessageIsPermanentWithTheExchangeAndKeyAndOthersArePublished() throws Exception {
    String exchange = "pgoutbox.test.unroutable." + UUID.randomUUID();
    adminChannel.exchangeDeclare(exchange, BuiltinExchangeType.DIRECT, false, true, null);
    String queue = adminChannel.queueDeclare("", false, true, true, null).getQueue();
    adminChannel.queueBind(queue, exchange, "bound.step");
    OutboxMessage routed = TestEvents.one("bound", "a-1", 1, "{}");
    OutboxMessage unroutable = TestEvents.one("nobody", "a-2", 1, "{}");
    OutboxMessage routedToo = TestEvents.one("bound", "a-3", 1, "{}");
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(PORT), RabbitMqRouting.byEventType(exchange)).build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(routed, unroutable, routedToo))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0)).isEqualTo(PublishResult.published());
      assertThat(results.get(1))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p ->
                  assertThat(p.reason())
                      .contains("unroutable")
                      .contains(exchange)
                      .contains("nobody.step")
                      .contains("NO_ROUTE"));
      assertThat(results.get(2)).isEqualTo(PublishResult.published());
    }
    Eventually.await(
        "2 messages in the queue", Duration.ofSeconds(10), () -> messageCount(queue) == 2);
  }

  @Test
  void tooLongHeaderNameOrRoutingKeyIsThatEventsPermanentFailureAndTheChannelStaysInStep()
      throws Exception {
    String[] eq = exchangeWithQueue("shortstr");
    String longName = "x-" + "h".repeat(300);
    OutboxMessage good1 = TestEvents.one("shortstr", "a-1", 1, "{\"n\":1}");
    OutboxMessage badHeader = withHeader(TestEvents.one("shortstr", "b-1", 1, "{}"), longName);
    OutboxMessage afterBad = TestEvents.one("shortstr", "b-1", 2, "{}");
    OutboxMessage badKey =
        withEventType(TestEvents.one("shortstr", "c-1", 1, "{}"), "é".repeat(130));
    OutboxMessage good2 = TestEvents.one("shortstr", "d-1", 1, "{\"n\":2}");
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(PORT), RabbitMqRouting.byEventType(eq[0]))
            .confirmTimeout(Duration.ofSeconds(10))
            .build()) {
      List<PublishResult> results =
          publisher
              .publish(List.of(good1, badHeader, afterBad, badKey, good2))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(results.get(0)).isEqualTo(PublishResult.published());
      assertThat(results.get(1))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p -> assertThat(p.reason()).contains("header name is 302 bytes").contains("255"));
      assertThat(results.get(2))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r -> assertThat(r.reason()).startsWith("held back").contains("b-1"));
      assertThat(results.get(3))
          .isInstanceOfSatisfying(
              PublishResult.Permanent.class,
              p -> assertThat(p.reason()).contains("routing key is 260 bytes"));
      assertThat(results.get(4)).isEqualTo(PublishResult.published());

      // The channel's confirm numbering is intact: every later event is confirmed at once.
      TestEvents later = TestEvents.of("shortstr", 20, 5, 25);
      for (List<OutboxMessage> batch : later.batches()) {
        assertThat(publisher.publish(batch).toCompletableFuture().get(1, TimeUnit.MINUTES))
            .containsOnly(PublishResult.published());
      }
      Eventually.await(
          "102 messages in the queue", Duration.ofSeconds(20), () -> messageCount(eq[1]) == 102);
    }
  }

  @Test
  void nackedEventHoldsBackTheRestOfItsAggregateAndOtherAggregatesArePublished() throws Exception {
    String exchange = "pgoutbox.test.nack." + UUID.randomUUID();
    adminChannel.exchangeDeclare(exchange, BuiltinExchangeType.DIRECT, false, true, null);
    String full =
        adminChannel
            .queueDeclare(
                "", false, true, true, Map.of("x-max-length", 1, "x-overflow", "reject-publish"))
            .getQueue();
    adminChannel.queueBind(full, exchange, "full.step");
    String roomy = adminChannel.queueDeclare("", false, true, true, null).getQueue();
    adminChannel.queueBind(roomy, exchange, "roomy.step");
    List<OutboxMessage> batch =
        List.of(
            TestEvents.one("full", "a-1", 1, "{}"),
            TestEvents.one("full", "a-1", 2, "{}"),
            TestEvents.one("full", "a-1", 3, "{}"),
            TestEvents.one("roomy", "b-1", 1, "{}"),
            TestEvents.one("roomy", "b-1", 2, "{}"));
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(PORT), RabbitMqRouting.byEventType(exchange)).build()) {
      List<PublishResult> results =
          publisher.publish(batch).toCompletableFuture().get(1, TimeUnit.MINUTES);
      assertThat(results.get(0)).isEqualTo(PublishResult.published());
      assertThat(results.get(1))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class, r -> assertThat(r.reason()).contains("nacked"));
      assertThat(results.get(2))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class, r -> assertThat(r.reason()).startsWith("held back"));
      assertThat(results.subList(3, 5)).containsOnly(PublishResult.published());

      // The same publisher goes on: once the queue has room, the held-back events go out.
      adminChannel.queuePurge(full);
      adminChannel.queueDelete(full);
      String replacement = adminChannel.queueDeclare("", false, true, true, null).getQueue();
      adminChannel.queueBind(replacement, exchange, "full.step");
      assertThat(
              publisher.publish(batch.subList(1, 3)).toCompletableFuture().get(1, TimeUnit.MINUTES))
          .containsOnly(PublishResult.published());
      Eventually.await(
          "2 messages in the new queue",
          Duration.ofSeconds(10),
          () -> messageCount(replacement) == 2);
    }
    Eventually.await(
        "2 messages in the roomy queue", Duration.ofSeconds(10), () -> messageCount(roomy) == 2);
  }

  @Test
  void aChannelClosedByTheBrokerIsReplacedAndLaterBatchesAreAllPublished() throws Exception {
    String[] eq = exchangeWithQueue("closed");
    String missing = "pgoutbox.test.missing." + UUID.randomUUID();
    RabbitMqRouting routing =
        m -> new RabbitMqRoute(m.aggregateId().equals("gone") ? missing : eq[0], m.eventType());
    TestEvents events = TestEvents.of("closed", 50, 4, 50);
    try (RabbitMqPublisher publisher =
        RabbitMqPublisher.builder(factory(PORT), routing)
            .confirmTimeout(Duration.ofSeconds(10))
            .build()) {
      // The unknown exchange makes RabbitMQ close the channel (404): its event and whatever was
      // in flight with it are answered retryable, never published twice in a wrong order.
      List<PublishResult> first =
          publisher
              .publish(List.of(TestEvents.one("closed", "gone", 1, "{}")))
              .toCompletableFuture()
              .get(1, TimeUnit.MINUTES);
      assertThat(first.get(0))
          .isInstanceOfSatisfying(
              PublishResult.Retryable.class,
              r -> assertThat(r.reason()).containsAnyOf("NOT_FOUND", "closed"));
      new Drain().all(publisher, events.batches(), Duration.ofMinutes(2));
    }
    OrderChecker checker = events.checker();
    consume(eq[1], events.size(), checker, "closed");
    checker.assertComplete();
  }

  private static OutboxMessage withHeader(OutboxMessage m, String name) {
    Map<String, String> headers = new java.util.HashMap<>(m.headers());
    headers.put(name, "v");
    return new OutboxMessage(
        m.id(),
        m.position(),
        m.aggregateType(),
        m.aggregateId(),
        m.eventType(),
        m.payload(),
        headers,
        m.attempt(),
        m.createdAt());
  }

  private static OutboxMessage withEventType(OutboxMessage m, String eventType) {
    return new OutboxMessage(
        m.id(),
        m.position(),
        m.aggregateType(),
        m.aggregateId(),
        eventType,
        m.payload(),
        m.headers(),
        m.attempt(),
        m.createdAt());
  }

  @Test
  void closingThePublisherLeavesTheHostConnectionOpen() throws Exception {
    String[] eq = exchangeWithQueue("host");
    try (Connection host = factory(PORT).newConnection("pgoutbox-test-host")) {
      try (RabbitMqPublisher publisher =
          RabbitMqPublisher.builder(host, RabbitMqRouting.byEventType(eq[0])).build()) {
        assertThat(
                publisher
                    .publish(List.of(TestEvents.one("host", "a-1", 1, "{\"n\":1}")))
                    .toCompletableFuture()
                    .get(1, TimeUnit.MINUTES))
            .containsExactly(PublishResult.published());
      }
      assertThat(host.isOpen()).isTrue();
      try (Channel ch = host.createChannel()) {
        ch.exchangeDeclarePassive(eq[0]); // the host's connection still works
      }
      assertThat(new String(adminChannel.basicGet(eq[1], true).getBody(), StandardCharsets.UTF_8))
          .isEqualTo("{\"n\":1}");
    }
  }

  private static long messageCount(String queue) {
    try {
      return adminChannel.messageCount(queue);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static void consume(String queue, int expected, OrderChecker checker, String type)
      throws Exception {
    try (Channel ch = admin.createChannel()) {
      ch.basicQos(1000);
      ch.basicConsume(
          queue,
          true,
          (tag, delivery) -> {
            Map<String, Object> headers = delivery.getProperties().getHeaders();
            assertThat(delivery.getProperties().getType()).isEqualTo(type + ".step");
            assertThat(delivery.getProperties().getDeliveryMode()).isEqualTo(2);
            assertThat(String.valueOf(headers.get(RabbitMqPublisher.AGGREGATE_TYPE_HEADER)))
                .isEqualTo(type);
            checker.received(
                RabbitMqEventIds.eventId(delivery),
                String.valueOf(headers.get(RabbitMqPublisher.AGGREGATE_ID_HEADER)),
                new String(delivery.getBody(), StandardCharsets.UTF_8),
                String.valueOf(headers.get("traceparent")));
          },
          tag -> {});
      Eventually.await(
          expected + " events from " + queue,
          Duration.ofMinutes(2),
          () -> checker.distinct() >= expected);
    }
  }
}
