package dev.pgoutbox.relay;

import static dev.pgoutbox.db.jooq.Tables.OUTBOX_EVENTS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.testing.DeadRows;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.relay.testing.RecordingPublisher;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.TestSchema;
import io.github.resilience4j.core.IntervalFunction;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.jooq.Record;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class BackoffAndDeadLettersIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private final List<RelayListener.EventFailure> failures = new CopyOnWriteArrayList<>();

  @BeforeEach
  void emptyOutbox() {
    db.execute("truncate outbox_events");
    failures.clear();
  }

  private OutboxRelay relay(RecordingPublisher publisher, RelayConfig config) {
    return OutboxRelay.builder()
        .name("backoff")
        .dataSource(db.dataSource())
        .schema(db.schema())
        .publisher(publisher)
        .config(config)
        .listener(
            new RelayListener() {
              @Override
              public void onFailed(EventFailure failure) {
                failures.add(failure);
              }
            })
        .build();
  }

  /** Moves an event's backoff into the past, as if its retry time had come. */
  private static void makeDue(UUID id) {
    db.execute(
        "update outbox_events set retry_after = now() - interval '1 second' where id = '"
            + id
            + "'");
  }

  private static Record row(UUID id) {
    return db.dsl()
        .select(
            OUTBOX_EVENTS.ATTEMPTS,
            OUTBOX_EVENTS.LAST_ERROR,
            OUTBOX_EVENTS.DEAD_AT,
            OUTBOX_EVENTS.PROCESSED_AT,
            org.jooq
                .impl
                .DSL
                .field("extract(epoch from retry_after - clock_timestamp())", Double.class)
                .as("retry_in_seconds"))
        .from(OUTBOX_EVENTS)
        .where(OUTBOX_EVENTS.ID.eq(id))
        .fetchOne();
  }

  @Test
  void retryAfterFollowsTheConfiguredIntervalFunction() throws Exception {
    IntervalFunction backoff = IntervalFunction.ofExponentialBackoff(Duration.ofHours(1), 2.0);
    RecordingPublisher publisher =
        new RecordingPublisher().decide(m -> PublishResult.retryable("broker unavailable"));
    OutboxRelay relay =
        relay(publisher, RelayConfig.builder().backoff(backoff).maxAttempts(5).build());
    UUID id = EventRows.insert(db.dsl(), "a", 1);

    for (int attempt = 1; attempt <= 3; attempt++) {
      assertThat(relay.runOnce()).isEqualTo(1);
      Record row = row(id);
      double expectedSeconds = backoff.apply(attempt) / 1000.0;
      assertThat(row.get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(attempt);
      assertThat(row.get("retry_in_seconds", Double.class))
          .as("retry_after - now after attempt %d", attempt)
          .isBetween(expectedSeconds - 30, expectedSeconds);
      assertThat(row.get(OUTBOX_EVENTS.LAST_ERROR)).isEqualTo("broker unavailable");
      assertThat(failures.get(attempt - 1).retryIn())
          .isEqualTo(Duration.ofMillis(backoff.apply(attempt)));
      assertThat(relay.runOnce()).as("not due before its backoff").isZero();
      makeDue(id);
    }
  }

  @Test
  void deadLettersAfterMaxAttempts() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher().decide(m -> PublishResult.retryable("timeout"));
    OutboxRelay relay = relay(publisher, RelayConfig.builder().maxAttempts(3).build());
    UUID id = EventRows.insert(db.dsl(), "a", 1);

    for (int attempt = 1; attempt <= 3; attempt++) {
      relay.runOnce();
      makeDue(id);
    }

    Record row = row(id);
    assertThat(row.get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(3);
    assertThat(row.get(OUTBOX_EVENTS.DEAD_AT)).isNotNull();
    assertThat(row.get(OUTBOX_EVENTS.PROCESSED_AT)).isNull();
    assertThat(failures)
        .extracting(RelayListener.EventFailure::dead)
        .containsExactly(false, false, true);
    assertThat(relay.runOnce()).as("a dead event is not claimed again").isZero();
    List<DeadRows.Dead> dead = DeadRows.list(db.dsl());
    assertThat(dead)
        .singleElement()
        .satisfies(
            d -> {
              assertThat(d.id()).isEqualTo(id);
              assertThat(d.lastError()).isEqualTo("timeout");
              assertThat(d.attempts()).isEqualTo(3);
            });
  }

  @Test
  void permanentFailureDeadLettersAtOnce() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(m -> PublishResult.permanent("record too large: 2 MB > 1 MB"));
    OutboxRelay relay = relay(publisher, RelayConfig.ofDefaults());
    UUID id = EventRows.insert(db.dsl(), "a", 1);

    relay.runOnce();

    Record row = row(id);
    assertThat(row.get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(1);
    assertThat(row.get(OUTBOX_EVENTS.DEAD_AT)).isNotNull();
    assertThat(row.get(OUTBOX_EVENTS.LAST_ERROR)).isEqualTo("record too large: 2 MB > 1 MB");
  }

  @Test
  void poisonEventHoldsBackOnlyItsOwnAggregateAndRetryReleasesItInOrder() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    m.aggregateId().equals("poison") && seqOf(m) == 2
                        ? PublishResult.permanent("schema rejected")
                        : PublishResult.published());
    OutboxRelay relay = relay(publisher, RelayConfig.ofDefaults());
    for (int seq = 1; seq <= 5; seq++) {
      EventRows.insert(db.dsl(), "poison", seq);
      EventRows.insert(db.dsl(), "healthy-" + seq, 1);
    }

    while (relay.runOnce() > 0) {
      // drain what can be drained
    }

    assertThat(publisher.delivered())
        .extracting(m -> m.aggregateId() + "#" + seqOf(m))
        .contains("healthy-1#1", "healthy-2#1", "healthy-3#1", "healthy-4#1", "healthy-5#1")
        .contains("poison#1")
        .doesNotContain("poison#2", "poison#3", "poison#4", "poison#5");
    assertThat(
            db.dsl()
                .fetchCount(
                    OUTBOX_EVENTS,
                    OUTBOX_EVENTS
                        .AGGREGATE_ID
                        .eq("poison")
                        .and(OUTBOX_EVENTS.PROCESSED_AT.isNull())
                        .and(OUTBOX_EVENTS.ATTEMPTS.eq(0))))
        .as("events held back behind the poison event were never attempted")
        .isEqualTo(3);

    DeadRows.Dead dead = DeadRows.list(db.dsl()).get(0);
    assertThat(dead.aggregateId()).isEqualTo("poison");
    publisher.decide(m -> PublishResult.published());
    assertThat(DeadRows.retry(db.dsl(), dead.id())).isTrue();
    while (relay.runOnce() > 0) {
      // drain
    }

    assertThat(publisher.delivered())
        .filteredOn(m -> m.aggregateId().equals("poison"))
        .extracting(BackoffAndDeadLettersIT::seqOf)
        .containsExactly(1, 2, 3, 4, 5);
  }

  @Test
  void releasePolicyLetsTheAggregateFlowPastADeadEvent() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(
                m ->
                    seqOf(m) == 2
                        ? PublishResult.permanent("rejected")
                        : PublishResult.published());
    OutboxRelay relay =
        relay(
            publisher,
            RelayConfig.builder().deadLetterPolicy(DeadLetterPolicy.RELEASE_AGGREGATE).build());
    for (int seq = 1; seq <= 4; seq++) {
      EventRows.insert(db.dsl(), "a", seq);
    }

    while (relay.runOnce() > 0) {
      // drain
    }

    assertThat(publisher.delivered())
        .extracting(BackoffAndDeadLettersIT::seqOf)
        .containsExactly(1, 3, 4);
    assertThat(DeadRows.list(db.dsl())).hasSize(1);
  }

  @Test
  void publishTimeoutCountsAsARetryableFailure() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher().neverAnswer();
    OutboxRelay relay =
        relay(publisher, RelayConfig.builder().publishTimeout(Duration.ofMillis(200)).build());
    UUID id = EventRows.insert(db.dsl(), "a", 1);

    relay.runOnce();

    Record row = row(id);
    assertThat(row.get(OUTBOX_EVENTS.ATTEMPTS)).isEqualTo(1);
    assertThat(row.get(OUTBOX_EVENTS.DEAD_AT)).isNull();
    assertThat(row.get(OUTBOX_EVENTS.LAST_ERROR)).isEqualTo("publish timed out after PT0.2S");
  }

  @Test
  void rowsTheRelayCannotReadAreDeadLetteredAndTheRestFlows() throws Exception {
    RecordingPublisher publisher = new RecordingPublisher();
    OutboxRelay relay = relay(publisher, RelayConfig.ofDefaults());
    UUID bad = EventRows.insert(db.dsl(), "bad", 1);
    db.execute("update outbox_events set headers = '[1, 2]' where id = '" + bad + "'");
    UUID numeric = EventRows.insert(db.dsl(), "numeric-header", 1);
    db.execute("update outbox_events set headers = '{\"n\": 5}' where id = '" + numeric + "'");
    EventRows.insert(db.dsl(), "good", 1);

    relay.runOnce();

    assertThat(publisher.delivered())
        .extracting(OutboxMessage::aggregateId)
        .containsExactly("good");
    assertThat(row(bad).get(OUTBOX_EVENTS.LAST_ERROR))
        .isEqualTo("unusable row: headers must be a JSON object of strings, was a JSON ARRAY");
    assertThat(row(numeric).get(OUTBOX_EVENTS.LAST_ERROR))
        .isEqualTo(
            "unusable row: headers must be a JSON object of strings, but header 'n' is a JSON NUMBER");
    assertThat(row(bad).get(OUTBOX_EVENTS.DEAD_AT)).isNotNull();
  }

  @Test
  void retryAfterHintFromTheBrokerIsHonouredWhenLongerThanTheBackoff() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher()
            .decide(m -> PublishResult.retryable("429 Too Many Requests", Duration.ofHours(3)));
    OutboxRelay relay =
        relay(publisher, RelayConfig.builder().maxRetryHint(Duration.ofHours(4)).build());
    UUID id = EventRows.insert(db.dsl(), "a", 1);

    relay.runOnce();

    assertThat(row(id).get("retry_in_seconds", Double.class))
        .isBetween(3 * 3600.0 - 30, 3 * 3600.0);
  }

  @Test
  void longErrorsAreTruncated() throws Exception {
    RecordingPublisher publisher =
        new RecordingPublisher().decide(m -> PublishResult.retryable("x".repeat(10_000)));
    OutboxRelay relay = relay(publisher, RelayConfig.builder().lastErrorMaxLength(100).build());
    UUID id = EventRows.insert(db.dsl(), "a", 1);

    relay.runOnce();

    assertThat(row(id).get(OUTBOX_EVENTS.LAST_ERROR)).hasSize(100).endsWith("...");
  }

  static int seqOf(OutboxMessage message) {
    return DeliveryChecker.seqOf(message.payload());
  }
}
