package dev.pgoutbox.docs;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.docs.BrokerClient.Message;
import dev.pgoutbox.docs.InMemoryBroker.Reaction;
import dev.pgoutbox.relay.OutboxRelay;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jooq.Record;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The custom publisher of {@code docs/custom-publisher.md}, {@link BrokerPublisher}, run through a
 * real relay against PostgreSQL: every rule the page states about a custom publisher, shown on the
 * rows the relay wrote and the messages the broker stored.
 */
class CustomPublisherIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final ObjectMapper JSON = new ObjectMapper();

  /** A fixed 1 s backoff, so that a retry time shows which delay the relay chose. */
  private static final IntervalFunction ONE_SECOND = IntervalFunction.of(Duration.ofSeconds(1));

  private InMemoryBroker broker;

  @BeforeEach
  void emptyOutboxAndNewBroker() {
    db.execute("truncate outbox_events");
    broker = new InMemoryBroker();
  }

  @AfterEach
  void closeBroker() {
    broker.close();
  }

  @Test
  void everyAggregateArrivesWholeAndInOrderInTheOnePartitionItsIdChooses() throws Exception {
    Map<String, List<String>> written = new LinkedHashMap<>();
    for (int seq = 1; seq <= 5; seq++) {
      for (int a = 0; a < 20; a++) {
        String aggregate = "agg-" + a;
        UUID id = EventRows.insert(db.dsl(), aggregate, seq);
        written.computeIfAbsent(aggregate, k -> new ArrayList<>()).add(id.toString());
      }
    }

    // snippet:start wiring
    BrokerPublisher publisher = new BrokerPublisher(broker, Duration.ofSeconds(5));
    OutboxRelay relay =
        OutboxRelay.builder()
            .name("orders")
            .dataSource(db.dataSource())
            .schema(db.schema())
            .publisher(publisher)
            .config(
                RelayConfig.builder().batchSize(30).publishTimeout(Duration.ofSeconds(30)).build())
            .build();
    relay.start();
    // snippet:end wiring
    try {
      Eventually.await(
          "all 100 events stored", Duration.ofSeconds(30), () -> broker.stored().size() == 100);
    } finally {
      assertThat(relay.stop(Duration.ofSeconds(10))).isTrue();
    }

    Map<String, List<String>> storedIds = new LinkedHashMap<>();
    for (InMemoryBroker.Stored s : broker.stored()) {
      assertThat(s.topic()).isEqualTo("order");
      assertThat(s.partition())
          .as("the aggregate id is the partition key")
          .isEqualTo(Math.floorMod(s.message().key().hashCode(), InMemoryBroker.PARTITIONS));
      storedIds.computeIfAbsent(s.message().key(), k -> new ArrayList<>()).add(s.message().id());
    }
    assertThat(storedIds).as("per aggregate, in the order written, none lost").isEqualTo(written);
    assertThat(broker.duplicates()).isZero();
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull())).isZero();
  }

  @Test
  void theEventIdIsTheBrokersDedupKeyAndTheStoredHeadersTravelWithTheEvent() throws Exception {
    UUID id = EventRows.insert(db.dsl(), "a", 1);
    Instant createdAt = row(id).get(OUTBOX_EVENTS.CREATED_AT).toInstant();
    OutboxRelay relay = relay(new BrokerPublisher(broker, Duration.ofSeconds(5)), config());

    assertThat(relay.runOnce()).isEqualTo(1);
    // The relay crashed after the broker's ack and before its commit: the event is pending again.
    db.execute("update outbox_events set processed_at = null where id = '" + id + "'");
    assertThat(relay.runOnce()).as("published a second time: at least once").isEqualTo(1);

    assertThat(broker.received())
        .hasSize(2)
        .allSatisfy(m -> assertThat(m.id()).isEqualTo(id.toString()));
    assertThat(broker.stored()).as("the broker kept one copy").hasSize(1);
    assertThat(broker.duplicates()).isEqualTo(1);
    Message message = broker.stored().getFirst().message();
    assertThat(message.topic()).isEqualTo("order");
    assertThat(message.key()).isEqualTo("a");
    assertThat(message.headers())
        .containsEntry("traceparent", "00-test-1")
        .containsEntry("event_id", id.toString())
        .containsEntry("event_type", "order.step")
        .containsEntry("aggregate_type", "order")
        .containsEntry("created_at", createdAt.toString());
    assertThat(JSON.readTree(new String(message.body(), StandardCharsets.UTF_8)))
        .isEqualTo(JSON.readTree("{\"aggregate\": \"a\", \"seq\": 1}"));
  }

  @Test
  void aFailedEventHoldsBackTheRestOfItsAggregateOnlyAndTheyFollowItInOrder() throws Exception {
    UUID a1 = EventRows.insert(db.dsl(), "a", 1);
    UUID a2 = EventRows.insert(db.dsl(), "a", 2);
    UUID a3 = EventRows.insert(db.dsl(), "a", 3);
    UUID b1 = EventRows.insert(db.dsl(), "b", 1);
    UUID b2 = EventRows.insert(db.dsl(), "b", 2);
    broker.script(m -> m.id().equals(a2.toString()) ? Reaction.connectionLost() : Reaction.ACK);
    OutboxRelay relay = relay(new BrokerPublisher(broker, Duration.ofSeconds(5)), config());

    assertThat(relay.runOnce()).isEqualTo(5);

    assertThat(ids(broker.received()))
        .as("a3 never went out behind the failed a2")
        .containsExactlyInAnyOrder(a1, a2, b1, b2);
    assertThat(row(a1).get(OUTBOX_EVENTS.PROCESSED_AT)).isNotNull();
    assertThat(row(a2).get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(1);
    assertThat(row(a2).get(OUTBOX_EVENTS.LAST_ERROR))
        .isEqualTo("send failed: java.io.IOException: connection reset");
    assertThat(row(a3).get(OUTBOX_EVENTS.ATTEMPTS)).as("held back, not charged").isZero();
    assertThat(row(a3).get(OUTBOX_EVENTS.PROCESSED_AT)).isNull();
    assertThat(row(b1).get(OUTBOX_EVENTS.PROCESSED_AT)).isNotNull();
    assertThat(row(b2).get(OUTBOX_EVENTS.PROCESSED_AT)).isNotNull();

    broker.script(m -> Reaction.ACK);
    makeDue(a2);
    assertThat(relay.runOnce()).isEqualTo(2);
    assertThat(ids(broker.stored().stream().map(InMemoryBroker.Stored::message).toList()))
        .as("a2 then a3, after a1")
        .containsSubsequence(a1, a2, a3);
    assertThat(db.dsl().fetchCount(OUTBOX_EVENTS, OUTBOX_EVENTS.PROCESSED_AT.isNull())).isZero();
  }

  @Test
  void aPermanentRefusalOrAnUnsendableEventIsDeadAtOnceAndHoldsItsAggregate() throws Exception {
    UUID big = EventRows.insert(db.dsl(), "a", 1);
    UUID behindBig = EventRows.insert(db.dsl(), "a", 2);
    UUID badTopic = EventRows.insert(db.dsl(), "order items", "b", "order.step", 1);
    UUID fine = EventRows.insert(db.dsl(), "c", 1);
    broker.script(
        m ->
            m.id().equals(big.toString())
                ? Reaction.refuse("message too large: 2 MB > 1 MB", true, null)
                : Reaction.ACK);
    OutboxRelay relay = relay(new BrokerPublisher(broker, Duration.ofSeconds(5)), config());

    assertThat(relay.runOnce()).isEqualTo(4);

    assertThat(row(big).get(OUTBOX_EVENTS.DEAD_AT)).as("dead at the first attempt").isNotNull();
    assertThat(row(big).get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(1);
    assertThat(row(big).get(OUTBOX_EVENTS.LAST_ERROR))
        .isEqualTo("refused: message too large: 2 MB > 1 MB");
    assertThat(row(badTopic).get(OUTBOX_EVENTS.DEAD_AT)).isNotNull();
    assertThat(row(badTopic).get(OUTBOX_EVENTS.LAST_ERROR))
        .isEqualTo("cannot build the message: invalid topic name 'order items'");
    assertThat(ids(broker.received())).as("never sent").doesNotContain(badTopic, behindBig);
    assertThat(row(fine).get(OUTBOX_EVENTS.PROCESSED_AT)).isNotNull();
    assertThat(relay.runOnce())
        .as("HOLD_AGGREGATE: the event behind the dead one waits for an operator")
        .isZero();
    assertThat(row(behindBig).get(OUTBOX_EVENTS.ATTEMPTS)).isZero();
  }

  @Test
  void aRetryableFailureBacksOffAndIsDeadAfterMaxAttempts() throws Exception {
    UUID id = EventRows.insert(db.dsl(), "a", 1);
    broker.script(m -> Reaction.connectionLost());
    OutboxRelay relay =
        relay(new BrokerPublisher(broker, Duration.ofSeconds(5)), config().maxAttempts(2));

    relay.runOnce();
    assertThat(row(id).get(OUTBOX_EVENTS.DEAD_AT)).isNull();
    assertThat(retryInSeconds(id)).as("the relay's backoff").isBetween(0.0, 1.0);
    assertThat(relay.runOnce()).as("not due before its backoff").isZero();
    makeDue(id);
    relay.runOnce();

    assertThat(row(id).get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(2);
    assertThat(row(id).get(OUTBOX_EVENTS.DEAD_AT)).as("dead after maxAttempts(2)").isNotNull();
  }

  @Test
  void theBrokersRetryHintIsHonouredAndCutAtMaxRetryAfter() throws Exception {
    UUID hinted = EventRows.insert(db.dsl(), "hinted", 1);
    UUID absurd = EventRows.insert(db.dsl(), "absurd", 1);
    UUID negative = EventRows.insert(db.dsl(), "negative", 1);
    broker.script(
        m ->
            switch (m.key()) {
              case "hinted" -> Reaction.refuse("throttled", false, Duration.ofSeconds(90));
              case "absurd" -> Reaction.refuse("throttled", false, Duration.ofDays(2));
              default -> Reaction.refuse("throttled", false, Duration.ofSeconds(-5));
            });
    OutboxRelay relay = relay(new BrokerPublisher(broker, Duration.ofSeconds(5)), config());

    assertThat(relay.runOnce()).isEqualTo(3);

    assertThat(retryInSeconds(hinted))
        .as("the hint, longer than the backoff")
        .isBetween(80.0, 90.0);
    assertThat(retryInSeconds(absurd))
        .as("two days cut to MAX_RETRY_AFTER (5 min)")
        .isBetween(290.0, 300.0);
    assertThat(retryInSeconds(negative))
        .as("a negative hint ignored: the backoff")
        .isBetween(0.0, 1.0);
    assertThat(row(absurd).get(OUTBOX_EVENTS.DEAD_AT)).as("a hint is never a dead letter").isNull();
  }

  @Test
  void anExceptionFromTheClientFailsOnlyThatEvent() throws Exception {
    UUID a1 = EventRows.insert(db.dsl(), "a", 1);
    UUID a2 = EventRows.insert(db.dsl(), "a", 2);
    UUID b1 = EventRows.insert(db.dsl(), "b", 1);
    broker.script(m -> m.id().equals(a1.toString()) ? Reaction.throwOnSend() : Reaction.ACK);
    OutboxRelay relay = relay(new BrokerPublisher(broker, Duration.ofSeconds(5)), config());

    relay.runOnce();

    assertThat(row(a1).get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(1);
    assertThat(row(a1).get(OUTBOX_EVENTS.LAST_ERROR))
        .isEqualTo(
            "send failed for event " + a1 + ": java.lang.IllegalStateException: client is closed");
    assertThat(row(a2).get(OUTBOX_EVENTS.ATTEMPTS)).isZero();
    assertThat(row(b1).get(OUTBOX_EVENTS.PROCESSED_AT)).as("other aggregates unharmed").isNotNull();
  }

  @Test
  void anExceptionOutOfPublishItselfFailsTheWholeBatch() throws Exception {
    UUID a1 = EventRows.insert(db.dsl(), "a", 1);
    UUID a2 = EventRows.insert(db.dsl(), "a", 2);
    UUID b1 = EventRows.insert(db.dsl(), "b", 1);
    Publisher throwing =
        batch -> {
          throw new IllegalStateException("bug in publish");
        };
    OutboxRelay relay = relay(throwing, config());

    relay.runOnce();

    for (UUID head : List.of(a1, b1)) {
      assertThat(row(head).get(OUTBOX_EVENTS.ATTEMPTS)).as("every aggregate charged").isEqualTo(1);
      assertThat(row(head).get(OUTBOX_EVENTS.LAST_ERROR)).startsWith("publisher threw");
    }
    assertThat(row(a2).get(OUTBOX_EVENTS.ATTEMPTS)).isZero();
  }

  @Test
  void aLostAckIsThatEventsRetryableFailureAfterTheAckTimeout() throws Exception {
    UUID a1 = EventRows.insert(db.dsl(), "a", 1);
    UUID a2 = EventRows.insert(db.dsl(), "a", 2);
    UUID b1 = EventRows.insert(db.dsl(), "b", 1);
    UUID b2 = EventRows.insert(db.dsl(), "b", 2);
    broker.script(m -> m.id().equals(a1.toString()) ? Reaction.HANG : Reaction.ACK);
    OutboxRelay relay = relay(new BrokerPublisher(broker, Duration.ofMillis(200)), config());

    relay.runOnce();

    assertThat(row(a1).get(OUTBOX_EVENTS.LAST_ERROR)).isEqualTo("no acknowledgement within PT0.2S");
    assertThat(row(a2).get(OUTBOX_EVENTS.ATTEMPTS)).isZero();
    assertThat(ids(broker.received())).doesNotContain(a2);
    assertThat(row(b1).get(OUTBOX_EVENTS.PROCESSED_AT)).isNotNull();
    assertThat(row(b2).get(OUTBOX_EVENTS.PROCESSED_AT)).isNotNull();
    assertThat(broker.hung())
        .singleElement()
        .satisfies(ack -> assertThat(ack.isCancelled()).isTrue());
  }

  @Test
  void aStageThatNeverCompletesIsCutByThePublishTimeoutAndSendsNothingMore() throws Exception {
    UUID a1 = EventRows.insert(db.dsl(), "a", 1);
    UUID a2 = EventRows.insert(db.dsl(), "a", 2);
    broker.script(m -> m.id().equals(a1.toString()) ? Reaction.HANG : Reaction.ACK);
    OutboxRelay relay =
        relay(
            new BrokerPublisher(broker, Duration.ofMinutes(1)),
            config().publishTimeout(Duration.ofMillis(500)));

    assertThat(relay.runOnce()).isEqualTo(2);

    assertThat(row(a1).get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(1);
    assertThat(row(a1).get(OUTBOX_EVENTS.LAST_ERROR)).isEqualTo("publish timed out after PT0.5S");
    assertThat(row(a2).get(OUTBOX_EVENTS.ATTEMPTS)).as("behind it, uncharged").isZero();
    assertThat(broker.hung())
        .as("the relay cancelled the run, which cancelled the request in flight")
        .singleElement()
        .satisfies(ack -> assertThat(ack.isCancelled()).isTrue());
    assertThat(ids(broker.received())).as("nothing sent after the timeout").containsExactly(a1);
  }

  @Test
  void stopInterruptsTheBatchInFlightAndAStoppedRelayMustBeBuiltAnew() throws Exception {
    UUID id = EventRows.insert(db.dsl(), "a", 1);
    broker.script(m -> Reaction.HANG);
    BrokerPublisher publisher = new BrokerPublisher(broker, Duration.ofMinutes(1));
    OutboxRelay relay = relay(publisher, config().publishTimeout(Duration.ofMinutes(5)));
    relay.start();
    Eventually.await(
        "the event handed to the broker",
        Duration.ofSeconds(10),
        () -> broker.received().size() == 1);

    assertThat(relay.stop(Duration.ofMillis(200)))
        .as("the batch did not finish in time: interrupted and rolled back")
        .isFalse();
    Eventually.await(
        "the request in flight cancelled",
        Duration.ofSeconds(10),
        () -> broker.hung().getFirst().isCancelled());
    assertThat(row(id).get(OUTBOX_EVENTS.PROCESSED_AT)).isNull();
    assertThat(row(id).get(OUTBOX_EVENTS.ATTEMPTS)).as("no attempt charged").isZero();
    assertThatThrownBy(relay::start)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cannot start again: build a new relay");

    broker.script(m -> Reaction.ACK);
    try (OutboxRelay next = relay(publisher, config())) {
      next.start();
      Eventually.await(
          "published by the new relay", Duration.ofSeconds(10), () -> broker.stored().size() == 1);
    }
  }

  private static RelayConfig.Builder config() {
    return RelayConfig.builder().backoff(ONE_SECOND).pollInterval(Duration.ofMillis(50));
  }

  private static OutboxRelay relay(Publisher publisher, RelayConfig.Builder config) {
    return OutboxRelay.builder()
        .name("custom")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(config.build())
        .build();
  }

  private static List<UUID> ids(List<Message> messages) {
    return messages.stream().map(m -> UUID.fromString(m.id())).toList();
  }

  private static Record row(UUID id) {
    return db.dsl().selectFrom(OUTBOX_EVENTS).where(OUTBOX_EVENTS.ID.eq(id)).fetchOne();
  }

  /** Seconds from now to the event's retry time. */
  private static double retryInSeconds(UUID id) {
    return db.dsl()
        .select(
            org.jooq.impl.DSL.field(
                "extract(epoch from retry_after - clock_timestamp())", Double.class))
        .from(OUTBOX_EVENTS)
        .where(OUTBOX_EVENTS.ID.eq(id))
        .fetchOne(0, Double.class);
  }

  /** Moves an event's retry time into the past, as if its backoff had passed. */
  private static void makeDue(UUID id) {
    db.execute(
        "update outbox_events set retry_after = now() - interval '1 second' where id = '"
            + id
            + "'");
  }
}
