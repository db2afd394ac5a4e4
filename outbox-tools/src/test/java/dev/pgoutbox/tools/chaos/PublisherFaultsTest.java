package dev.pgoutbox.tools.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class PublisherFaultsTest {

  private static final long SEED = 7;

  /** The real publisher's stand-in: records what it was handed, publishes everything. */
  private static final class Inner implements Publisher {
    final List<OutboxMessage> sent = new ArrayList<>();
    final List<CompletionStage<List<PublishResult>>> stages = new ArrayList<>();

    @Override
    public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
      AggregateSequencer.Run run =
          AggregateSequencer.ofDefaults()
              .publish(
                  batch,
                  m -> {
                    sent.add(m);
                    return CompletableFuture.completedFuture(PublishResult.published());
                  });
      stages.add(run);
      return run;
    }
  }

  private final Inner inner = new Inner();
  private final AtomicLong now = new AtomicLong();
  private final ByteArrayOutputStream log = new ByteArrayOutputStream();

  private PublisherFaults faults(double permanentRate, double retryableRate, Duration slowEvery) {
    return faults(permanentRate, retryableRate, slowEvery, Long.MAX_VALUE);
  }

  private PublisherFaults faults(
      double permanentRate, double retryableRate, Duration slowEvery, long slowUntilNanos) {
    return new PublisherFaults(
        inner,
        SEED,
        new Random(SEED),
        permanentRate,
        retryableRate,
        slowEvery,
        slowUntilNanos,
        now::get,
        new PrintStream(log, true, StandardCharsets.UTF_8));
  }

  private static OutboxMessage event(String aggregate, long position, String type, int attempt) {
    return new OutboxMessage(
        UUID.randomUUID(),
        position,
        "chaos",
        aggregate,
        type,
        "{}",
        Map.of(),
        attempt,
        Instant.EPOCH);
  }

  private static OutboxMessage step(String aggregate, long position) {
    return event(aggregate, position, "step", 1);
  }

  private String log() {
    return log.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aPoisonEventIsRefusedForGoodAndHoldsBackOnlyTheRestOfItsAggregate() {
    List<OutboxMessage> batch =
        List.of(
            step("a", 1),
            event("a", 2, PublisherFaults.POISON_EVENT_TYPE, 1),
            step("a", 3),
            step("b", 4));

    List<PublishResult> results =
        faults(0, 0, Duration.ZERO).publish(batch).toCompletableFuture().join();

    assertThat(results.get(0)).isEqualTo(PublishResult.published());
    assertThat(results.get(1)).isInstanceOf(PublishResult.Permanent.class);
    assertThat(((PublishResult.Permanent) results.get(1)).reason())
        .contains("unroutable")
        .contains(PublisherFaults.MARK);
    assertThat(results.get(2)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(((PublishResult.Retryable) results.get(2)).reason()).startsWith("held back");
    assertThat(results.get(3)).isEqualTo(PublishResult.published());
    assertThat(inner.sent)
        .as("only what comes before a fault reaches the broker")
        .extracting(OutboxMessage::position)
        .containsExactly(1L, 4L);
    assertThat(log()).contains(PublisherFaults.LOG_PREFIX + "kind=poison");
  }

  @Test
  void theEventAtTheSeedsPositionGetsAnAbsurdHintOnItsFirstAttemptOnly() {
    long position = SEED % PublisherFaults.ABSURD_HINT_EVERY + PublisherFaults.ABSURD_HINT_EVERY;
    PublisherFaults faults = faults(0, 0, Duration.ZERO);

    PublishResult first =
        faults
            .publish(List.of(event("a", position, "step", 1)))
            .toCompletableFuture()
            .join()
            .get(0);
    PublishResult second =
        faults
            .publish(List.of(event("a", position, "step", 2)))
            .toCompletableFuture()
            .join()
            .get(0);

    assertThat(first).isInstanceOf(PublishResult.Retryable.class);
    assertThat(((PublishResult.Retryable) first).retryAfter())
        .isGreaterThan(Duration.ofDays(365L * 100));
    assertThat(second).isEqualTo(PublishResult.published());
    assertThat(log()).contains("kind=absurd-hint");
  }

  @Test
  void randomFaultsAreAnsweredAsTheirKindAndNothingOfThemIsSent() {
    List<PublishResult> permanent =
        faults(1.0, 0, Duration.ZERO)
            .publish(List.of(step("a", 1), step("a", 2)))
            .toCompletableFuture()
            .join();
    List<PublishResult> retryable =
        faults(0, 1.0, Duration.ZERO).publish(List.of(step("b", 3))).toCompletableFuture().join();

    assertThat(permanent.get(0)).isInstanceOf(PublishResult.Permanent.class);
    assertThat(permanent.get(1)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(retryable.get(0)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(((PublishResult.Retryable) retryable.get(0)).reason())
        .contains(PublisherFaults.MARK);
    assertThat(inner.sent).isEmpty();
  }

  @Test
  void aSlowBatchAnswersWhatItSentAndLeavesTheStalledEventAndItsSuccessorsUnanswered() {
    PublisherFaults faults = faults(0, 0, Duration.ofSeconds(10));
    List<OutboxMessage> batch = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      batch.add(step("agg-" + (i % 8), 1010 + i)); // no position at the absurd hint's
    }

    List<PublishResult> beforeSlow = faults.publish(batch).toCompletableFuture().join();
    now.set(Duration.ofSeconds(10).toNanos()); // the first slow batch comes 2 to 10 s in
    CompletableFuture<List<PublishResult>> slow = faults.publish(batch).toCompletableFuture();

    assertThat(beforeSlow).containsOnly(PublishResult.published());
    assertThat(slow).as("a stalled event keeps the batch from completing").isNotDone();
    List<PublishResult> soFar = partial(slow);
    assertThat(soFar).contains((PublishResult) null).contains(PublishResult.published());
    for (int a = 0; a < 8; a++) {
      boolean waiting = false;
      for (int i = a; i < batch.size(); i += 8) {
        if (soFar.get(i) == null) {
          waiting = true;
        } else {
          assertThat(waiting)
              .as("nothing after an unanswered event of aggregate %d is answered", a)
              .isFalse();
          assertThat(soFar.get(i)).isEqualTo(PublishResult.published());
        }
      }
    }

    assertThat(slow.cancel(true)).isTrue();
    assertThat(log())
        .contains("kind=slow-batch events=40")
        .contains("kind=slow-batch-cancelled events=40");
    now.set(Duration.ofSeconds(19).toNanos());
    assertThat(faults.publish(batch).toCompletableFuture())
        .as("the next slow batch comes 10 s later")
        .isCompleted();
  }

  @Test
  void afterTheWritersStopARelayProcessGetsItsFirstSlowBatchAndNoMore() {
    // Writing ended at 1 s, before this relay's first slow batch was due (2 to 10 s in): a relay
    // that published nothing while the writers ran still tests one publish timeout.
    PublisherFaults faults = faults(0, 0, Duration.ofSeconds(10), Duration.ofSeconds(1).toNanos());
    List<OutboxMessage> batch = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      batch.add(step("agg-" + i, 2010 + i));
    }
    now.set(Duration.ofSeconds(10).toNanos());
    CompletableFuture<List<PublishResult>> first = faults.publish(batch).toCompletableFuture();
    assertThat(first).as("the process's first slow batch").isNotDone();
    assertThat(first.cancel(true)).isTrue();

    now.set(Duration.ofSeconds(40).toNanos());
    assertThat(faults.publish(batch).toCompletableFuture())
        .as("no second slow batch once the writers stopped")
        .isCompleted();
    assertThat(log()).containsOnlyOnce("kind=slow-batch events=8");
  }

  private static List<PublishResult> partial(CompletableFuture<List<PublishResult>> stage) {
    return ((PublisherFaults.Run) stage).answeredSoFar();
  }
}
