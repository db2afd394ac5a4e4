package dev.pgoutbox.relay.brokers;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.testing.DeliveryChecker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * What a consumer read back from a broker, checked: the {@link DeliveryChecker} for the order
 * (nothing lost, each aggregate's events first seen in seq order, duplicates counted, not failed:
 * delivery is at least once), plus what only a broker test can see: no foreign event, and the id,
 * aggregate, payload and {@code traceparent} of each one as written. Thread-safe.
 */
public final class OrderChecker {

  private final Map<UUID, OutboxMessage> expected;
  private final Map<String, Integer> written;
  private final DeliveryChecker delivery = new DeliveryChecker();
  private final Set<UUID> seen = new HashSet<>();
  private final List<String> problems = new ArrayList<>();

  OrderChecker(Map<UUID, OutboxMessage> expected, Map<String, Integer> written) {
    this.expected = expected;
    this.written = written;
  }

  /**
   * One message as the consumer read it.
   *
   * @param eventId the id read back with the broker's event-id helper
   * @param aggregateId the aggregate id read from the message (key or header)
   * @param payload the body
   * @param traceparent the {@code traceparent} header read from the message
   */
  public synchronized void received(
      UUID eventId, String aggregateId, String payload, @Nullable String traceparent) {
    OutboxMessage m = expected.get(eventId);
    if (m == null) {
      problems.add("unexpected event " + eventId);
      return;
    }
    if (!m.aggregateId().equals(aggregateId)) {
      problems.add(eventId + ": aggregate " + aggregateId + ", expected " + m.aggregateId());
    }
    if (!TestEvents.json(m.payload()).equals(TestEvents.json(payload))) {
      problems.add(eventId + ": payload " + payload + ", expected " + m.payload());
    }
    if (!m.headers().get("traceparent").equals(traceparent)) {
      problems.add(
          eventId
              + ": traceparent "
              + traceparent
              + ", expected "
              + m.headers().get("traceparent"));
    }
    seen.add(eventId);
    delivery.receive(payload.getBytes(StandardCharsets.UTF_8), System.currentTimeMillis());
  }

  /** How many distinct events arrived so far. */
  public synchronized int distinct() {
    return seen.size();
  }

  /** How many redeliveries arrived. */
  public long duplicates() {
    return delivery.duplicates();
  }

  /** Asserts nothing lost, nothing foreign or altered, every aggregate in order. */
  public synchronized void assertComplete() {
    assertThat(problems).as("malformed or foreign messages").isEmpty();
    assertThat(seen).as("distinct events received").hasSize(expected.size());
    assertThat(delivery.missing(written)).as("events lost").isZero();
    assertThat(delivery.reordered()).as("first deliveries out of seq order").isZero();
  }
}
