package dev.pgoutbox.relay.brokers;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * An independent checker of what a consumer read back from a broker: no event lost, none foreign,
 * each aggregate's events first seen in seq order, headers intact; duplicates are counted, not
 * failed (delivery is at least once). Thread-safe.
 */
public final class OrderChecker {

  private final Map<UUID, OutboxMessage> expected;
  private final int aggregates;
  private final int perAggregate;
  private final Set<UUID> seen = new HashSet<>();
  private final Map<String, List<Integer>> firstSeenSeqs = new HashMap<>();
  private final List<String> problems = new ArrayList<>();
  private int duplicates;

  OrderChecker(Map<UUID, OutboxMessage> expected, int aggregates, int perAggregate) {
    this.expected = expected;
    this.aggregates = aggregates;
    this.perAggregate = perAggregate;
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
    if (!seen.add(eventId)) {
      duplicates++;
      return;
    }
    firstSeenSeqs
        .computeIfAbsent(aggregateId, k -> new ArrayList<>())
        .add(TestEvents.seqOf(payload));
  }

  /** How many distinct events arrived so far. */
  public synchronized int distinct() {
    return seen.size();
  }

  /** How many redeliveries arrived. */
  public synchronized int duplicates() {
    return duplicates;
  }

  /** Asserts nothing lost, nothing foreign or altered, every aggregate in order. */
  public synchronized void assertComplete() {
    assertThat(problems).as("malformed or foreign messages").isEmpty();
    assertThat(seen).as("distinct events received").hasSize(expected.size());
    assertThat(firstSeenSeqs).as("aggregates received").hasSize(aggregates);
    List<Integer> inOrder = new ArrayList<>();
    for (int s = 1; s <= perAggregate; s++) {
      inOrder.add(s);
    }
    firstSeenSeqs.forEach(
        (aggregate, seqs) ->
            assertThat(seqs).as("seqs of %s, in arrival order", aggregate).isEqualTo(inOrder));
  }
}
