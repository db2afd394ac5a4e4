package dev.pgoutbox.relay.brokers;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxMessage;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Events for broker tests, as the relay would hand them over: every event carries {@code
 * (aggregate, seq)} in its payload, a {@code traceparent} header and a unique id; batches hold runs
 * of several aggregates, each in seq order, and an aggregate's later events come in later batches.
 */
public final class TestEvents {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final List<OutboxMessage> all;
  private final List<List<OutboxMessage>> batches;
  private final Map<UUID, OutboxMessage> byId = new HashMap<>();
  private final int aggregates;
  private final int perAggregate;

  private TestEvents(String aggregateType, int aggregates, int perAggregate, int batchSize) {
    this.aggregates = aggregates;
    this.perAggregate = perAggregate;
    List<OutboxMessage> all = new ArrayList<>(aggregates * perAggregate);
    long position = 0;
    Instant now = Instant.now();
    // Round robin over aggregates: seq 1 of every aggregate, then seq 2, ... (as they were
    // written).
    for (int seq = 1; seq <= perAggregate; seq++) {
      for (int a = 0; a < aggregates; a++) {
        all.add(message(aggregateType, aggregateId(a), seq, ++position, now));
      }
    }
    all.forEach(m -> byId.put(m.id(), m));
    this.all = List.copyOf(all);
    List<List<OutboxMessage>> cut = new ArrayList<>();
    for (int from = 0; from < all.size(); from += batchSize) {
      List<OutboxMessage> batch =
          new ArrayList<>(all.subList(from, Math.min(all.size(), from + batchSize)));
      // Within a batch the relay orders by aggregate id, then position.
      batch.sort(
          Comparator.comparing(OutboxMessage::aggregateId)
              .thenComparingLong(OutboxMessage::position));
      cut.add(List.copyOf(batch));
    }
    this.batches = List.copyOf(cut);
  }

  /** {@code aggregates * perAggregate} events of type {@code aggregateType}, in batches. */
  public static TestEvents of(
      String aggregateType, int aggregates, int perAggregate, int batchSize) {
    return new TestEvents(aggregateType, aggregates, perAggregate, batchSize);
  }

  /** One event, for single-event tests. */
  public static OutboxMessage one(
      String aggregateType, String aggregateId, int seq, String payload) {
    return new OutboxMessage(
        UUID.randomUUID(),
        seq,
        aggregateType,
        aggregateId,
        aggregateType + ".step",
        payload,
        Map.of("traceparent", traceparent(), "seq", Integer.toString(seq)),
        1,
        Instant.now());
  }

  private static OutboxMessage message(
      String type, String aggregateId, int seq, long position, Instant now) {
    return new OutboxMessage(
        UUID.randomUUID(),
        position,
        type,
        aggregateId,
        type + ".step",
        "{\"aggregate\":\"" + aggregateId + "\",\"seq\":" + seq + "}",
        Map.of("traceparent", traceparent(), "seq", Integer.toString(seq)),
        1,
        now);
  }

  static String traceparent() {
    ThreadLocalRandom r = ThreadLocalRandom.current();
    return String.format("00-%016x%016x-%016x-01", r.nextLong(), r.nextLong(), r.nextLong() | 1L);
  }

  /** The id of aggregate number {@code i}. */
  public static String aggregateId(int i) {
    return String.format("agg-%05d", i);
  }

  /** The batches, in publishing order. */
  public List<List<OutboxMessage>> batches() {
    return batches;
  }

  /** Every event, in the order they were written. */
  public List<OutboxMessage> all() {
    return all;
  }

  /** Every event. */
  public int size() {
    return byId.size();
  }

  /** A checker expecting every one of these events. */
  public OrderChecker checker() {
    Map<String, Integer> written = new HashMap<>();
    for (int a = 0; a < aggregates; a++) {
      written.put(aggregateId(a), perAggregate);
    }
    return new OrderChecker(byId, written);
  }

  /** The {@code seq} read back from a payload this class made (whatever its JSON layout). */
  public static int seqOf(String payload) {
    JsonNode seq = json(payload).get("seq");
    if (seq == null) {
      throw new AssertionError("not a test payload: " + payload);
    }
    return seq.asInt();
  }

  /** The payload parsed, to compare JSON documents whatever their layout (jsonb reorders keys). */
  public static JsonNode json(String payload) {
    try {
      return JSON.readTree(payload);
    } catch (JsonProcessingException e) {
      throw new AssertionError("payload is not JSON: " + payload, e);
    }
  }
}
