package dev.pgoutbox.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.docs.BrokerClient.Message;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.Test;

/** {@link BrokerPublisher} against a client whose acknowledgements the test hands out by hand. */
class BrokerPublisherTest {

  /** A client that answers nothing until the test completes the request of an event. */
  private static final class ManualClient implements BrokerClient {
    final Map<String, CompletableFuture<Void>> requests = new LinkedHashMap<>();
    final List<String> sent = new ArrayList<>();

    @Override
    public synchronized CompletableFuture<Void> send(Message message) {
      sent.add(message.id());
      CompletableFuture<Void> ack = new CompletableFuture<>();
      requests.put(message.id(), ack);
      return ack;
    }

    synchronized CompletableFuture<Void> request(OutboxMessage event) {
      return requests.get(event.id().toString());
    }

    synchronized List<String> sent() {
      return List.copyOf(sent);
    }
  }

  private final ManualClient client = new ManualClient();
  private final BrokerPublisher publisher = new BrokerPublisher(client, Duration.ofMinutes(1));

  @Test
  void answersOncePerEventInBatchOrderWhateverOrderTheAcksArriveIn() throws Exception {
    OutboxMessage a1 = event("a", 1);
    OutboxMessage a2 = event("a", 2);
    OutboxMessage b1 = event("b", 1);
    OutboxMessage c1 = event("c", 1);
    CompletionStage<List<PublishResult>> stage = publisher.publish(List.of(a1, a2, b1, c1));

    assertThat(client.sent())
        .as("one event per aggregate in flight")
        .containsExactly(id(a1), id(b1), id(c1));
    client.request(c1).complete(null);
    client.request(b1).completeExceptionally(new BrokerClient.Refused("throttled", false, null));
    client.request(a1).complete(null);
    assertThat(client.sent()).as("a2 only once a1 was acknowledged").endsWith(id(a2));
    client.request(a2).complete(null);

    assertThat(stage.toCompletableFuture().get())
        .containsExactly(
            PublishResult.published(),
            PublishResult.published(),
            PublishResult.retryable("refused: throttled"),
            PublishResult.published());
  }

  @Test
  void afterAFailureTheRestOfTheAggregateIsNotSentAndAnsweredHeldBack() throws Exception {
    OutboxMessage a1 = event("a", 1);
    OutboxMessage a2 = event("a", 2);
    OutboxMessage a3 = event("a", 3);
    CompletionStage<List<PublishResult>> stage = publisher.publish(List.of(a1, a2, a3));

    client.request(a1).completeExceptionally(new BrokerClient.Refused("too large", true, null));

    List<PublishResult> results = stage.toCompletableFuture().get();
    assertThat(client.sent()).containsExactly(id(a1));
    assertThat(results.get(0)).isEqualTo(PublishResult.permanent("refused: too large"));
    assertThat(results.subList(1, 3))
        .allSatisfy(
            r ->
                assertThat(((PublishResult.Retryable) r).reason())
                    .startsWith("held back: an earlier event of aggregate order/a failed"));
  }

  @Test
  void theBrokersHintIsCutAtMaxRetryAfterAndIgnoredWhenNotPositive() throws Exception {
    assertThat(hintFor(Duration.ofSeconds(90))).isEqualTo(Duration.ofSeconds(90));
    assertThat(hintFor(Duration.ofDays(365))).isEqualTo(BrokerPublisher.MAX_RETRY_AFTER);
    assertThat(hintFor(Duration.ofSeconds(-1))).isNull();
    assertThat(hintFor(Duration.ZERO)).isNull();
    assertThat(hintFor(null)).isNull();
  }

  @Test
  void cancellingTheRunCancelsTheRequestInFlightAndSendsNothingMore() {
    OutboxMessage a1 = event("a", 1);
    OutboxMessage a2 = event("a", 2);
    CompletionStage<List<PublishResult>> stage = publisher.publish(List.of(a1, a2));

    stage.toCompletableFuture().cancel(true);
    client.request(a1).complete(null);

    assertThat(client.request(a1).isCancelled()).isTrue();
    assertThat(client.sent()).containsExactly(id(a1));
  }

  private Duration hintFor(Duration hint) throws Exception {
    OutboxMessage event = event("h", 1);
    CompletionStage<List<PublishResult>> stage = publisher.publish(List.of(event));
    client.request(event).completeExceptionally(new BrokerClient.Refused("throttled", false, hint));
    return ((PublishResult.Retryable) stage.toCompletableFuture().get().getFirst()).retryAfter();
  }

  private static String id(OutboxMessage event) {
    return event.id().toString();
  }

  private static OutboxMessage event(String aggregate, int seq) {
    return new OutboxMessage(
        UUID.randomUUID(),
        seq,
        "order",
        aggregate,
        "order.step",
        "{\"seq\": " + seq + "}",
        Map.of(),
        1,
        Instant.now());
  }
}
