package dev.pgoutbox.relay.brokers;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * What every broker publisher must do, against its real broker: the cases the four publisher tests
 * (Kafka, RabbitMQ, NATS, webhook) each repeated. A broker's test extends this class and says how
 * to reach its broker ({@link #destination}, {@link #destinationWithOutage}) and which event it
 * refuses for good ({@link #refused}); its own tests keep what only that broker does.
 *
 * <p>Checked here: a whole backlog delivered in order per aggregate with ids, payloads and headers
 * intact (read back by a consumer of the broker and the {@link OrderChecker}); an outage answered
 * retryable for the whole batch and everything delivered once the broker is back; a permanently
 * refused event holding back only the later events of its own aggregate.
 */
public abstract class PublisherContract {

  /** Where one test publishes to: a topic, an exchange and queue, a stream, an endpoint. */
  public interface Destination extends AutoCloseable {

    /** A new publisher to this destination; the test closes it. */
    Publisher publisher() throws Exception;

    /** Reads back everything the broker holds for this destination into {@code checker}. */
    void readBack(OrderChecker checker, int expected) throws Exception;

    /** Takes the broker away from the publisher (only destinations with an outage). */
    default void beginOutage() throws Exception {
      throw new UnsupportedOperationException("not a destination with an outage");
    }

    /** Brings the broker back. */
    default void endOutage() throws Exception {
      throw new UnsupportedOperationException("not a destination with an outage");
    }

    /** Texts of which the reason of the last retryable answer during the outage has one. */
    default List<String> outageReasons() {
      return List.of("");
    }

    /** Removes what the destination made (a stream, a proxy, a server of its own). */
    @Override
    default void close() {}
  }

  /**
   * An event the broker refuses for good, and texts its permanent failure's reason contains.
   *
   * @param message the event (of aggregate {@code aggregateId}, seq 1)
   * @param reasonContains what the reason names (the limit broken, the destination)
   */
  public record Refused(OutboxMessage message, List<String> reasonContains) {}

  /** A destination for events of {@code aggregateType}, new for the test. */
  protected abstract Destination destination(String aggregateType) throws Exception;

  /**
   * A destination whose broker the test can take down and bring back, with a publisher whose
   * timeouts are short enough for an outage test.
   */
  protected abstract Destination destinationWithOutage(String aggregateType) throws Exception;

  /** An event of {@code aggregateType}/{@code aggregateId}, seq 1, that {@code to} refuses. */
  protected abstract Refused refused(Destination to, String aggregateType, String aggregateId)
      throws Exception;

  @Test
  void deliversTenThousandEventsOverAThousandAggregatesInOrderWithIdsAndHeaders() throws Exception {
    TestEvents events = TestEvents.of("order", 1000, 10, 500);
    try (Destination destination = destination("order")) {
      try (Publisher publisher = destination.publisher()) {
        Drain drain = new Drain().all(publisher, events.batches(), Duration.ofMinutes(3));
        // Retryable answers are legitimate on a loaded machine (e.g. a request timeout and the
        // client's retry); what matters is checked below: nothing lost, order intact.
        System.out.println(
            "retryable answers: "
                + drain.retryable()
                + " "
                + drain.reasons().stream().limit(3).toList());
      }
      OrderChecker checker = events.checker();
      destination.readBack(checker, events.size());
      checker.assertComplete();
    }
  }

  @Test
  void anOutageAnswersRetryableAndEverythingIsDeliveredAfterIt() throws Exception {
    TestEvents events = TestEvents.of("outage", 100, 6, 200);
    List<List<OutboxMessage>> batches = events.batches();
    try (Destination destination = destinationWithOutage("outage")) {
      try (Publisher publisher = destination.publisher()) {
        new Drain().all(publisher, batches.subList(0, 1), Duration.ofMinutes(1));

        destination.beginOutage();
        List<PublishResult> whileDown =
            publisher.publish(batches.get(1)).toCompletableFuture().get(1, TimeUnit.MINUTES);
        assertThat(whileDown)
            .hasSize(batches.get(1).size())
            .allSatisfy(r -> assertThat(r).isInstanceOf(PublishResult.Retryable.class));
        assertThat(((PublishResult.Retryable) whileDown.get(whileDown.size() - 1)).reason())
            .containsAnyOf(destination.outageReasons().toArray(String[]::new));

        destination.endOutage();
        new Drain().all(publisher, batches.subList(1, batches.size()), Duration.ofMinutes(2));
      }
      OrderChecker checker = events.checker();
      destination.readBack(checker, events.size());
      checker.assertComplete();
    }
  }

  @Test
  void aRefusedEventIsPermanentAndHoldsBackOnlyItsAggregate() throws Exception {
    try (Destination destination = destination("refused")) {
      Refused refused = refused(destination, "refused", "a-1");
      OutboxMessage after = TestEvents.one("refused", "a-1", 2, "{}");
      OutboxMessage other = TestEvents.one("refused", "a-2", 1, "{}");
      try (Publisher publisher = destination.publisher()) {
        List<PublishResult> results =
            publisher
                .publish(List.of(refused.message(), after, other))
                .toCompletableFuture()
                .get(1, TimeUnit.MINUTES);
        assertThat(results.get(0))
            .isInstanceOfSatisfying(
                PublishResult.Permanent.class,
                p -> assertThat(p.reason()).contains(refused.reasonContains()));
        assertThat(results.get(1))
            .isInstanceOfSatisfying(
                PublishResult.Retryable.class,
                r ->
                    assertThat(r.reason())
                        .startsWith("held back: an earlier event of aggregate refused/a-1 failed")
                        .contains(refused.message().id().toString()));
        assertThat(results.get(2)).isEqualTo(PublishResult.published());
      }
    }
  }
}
