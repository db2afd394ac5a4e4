package dev.pgoutbox.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;

/**
 * The independent check of what reached a consumer, used by the relay's tests, the chaos run and
 * the benchmark harness: fed every message in the order it was received, it knows nothing of the
 * relays or the database. Each payload carries {@code {"aggregate": a, "seq": n}} (n counting from
 * 1 per aggregate) and, optionally, {@code "written_at": epoch millis} (for the wait); a seq seen
 * again is a duplicate, a first delivery with a seq below the aggregate's highest so far is a
 * reordering, and what the writers committed is compared at the end ({@link #missing}).
 *
 * <pre>{@code
 * DeliveryChecker.Verdict verdict = DeliveryChecker.check(written, payloadsInDeliveryOrder);
 * assertThat(verdict.lost()).isZero();
 * assertThat(verdict.reordered()).isZero();
 * }</pre>
 *
 * <p>Thread-safe.
 */
public final class DeliveryChecker {

  private static final ObjectMapper JSON = new ObjectMapper();

  /** Per aggregate: which seqs arrived (bit n = seq n) and the highest first-delivered seq. */
  private final Map<String, Arrivals> arrivals = new HashMap<>();

  private final AtomicLong received = new AtomicLong();
  private long delivered;
  private long duplicates;
  private long reordered;
  private long unreadable;
  private long longestWaitMillis;
  private long longestWaitWrittenAt;
  private final Histogram waits = new Histogram(3_600_000L, 3);

  /**
   * The verdict on a whole delivery at once.
   *
   * @param written events committed: the sum of the highest seq of every aggregate
   * @param received messages received, duplicates included
   * @param lost committed events that never arrived
   * @param reordered first deliveries that came after a higher seq of their aggregate
   * @param duplicates deliveries of an event already delivered
   */
  public record Verdict(long written, long received, long lost, long reordered, long duplicates) {}

  /**
   * Checks {@code payloads}, in the order they were delivered, against {@code written}: the highest
   * seq committed per aggregate (each aggregate has seqs 1..n).
   */
  public static Verdict check(Map<String, Integer> written, List<String> payloads) {
    DeliveryChecker checker = new DeliveryChecker();
    long now = System.currentTimeMillis();
    for (String payload : payloads) {
      checker.receive(payload.getBytes(StandardCharsets.UTF_8), now);
    }
    long expected = written.values().stream().mapToLong(Integer::longValue).sum();
    return new Verdict(
        expected,
        checker.received(),
        checker.missing(written),
        checker.reordered(),
        checker.duplicates());
  }

  /**
   * The {@code seq} of a payload with the checker's layout.
   *
   * @throws IllegalArgumentException if {@code payload} has no integer {@code seq}
   */
  public static int seqOf(String payload) {
    byte[] bytes = payload.getBytes(StandardCharsets.UTF_8);
    FlatPayload flat = FlatPayload.parse(bytes);
    if (flat != null) {
      return flat.seq;
    }
    try {
      JsonNode seq = JSON.readTree(bytes).get("seq");
      if (seq != null && seq.canConvertToInt()) {
        return seq.asInt();
      }
    } catch (IOException e) {
      // reported below
    }
    throw new IllegalArgumentException("payload has no integer seq: " + payload);
  }

  /** Records one message as received, {@code receivedAtMillis} epoch millis. */
  public void receive(byte[] payload, long receivedAtMillis) {
    received.incrementAndGet();
    FlatPayload flat = FlatPayload.parse(payload);
    if (flat != null) {
      record(
          flat.aggregate,
          flat.seq,
          flat.writtenAt == null ? receivedAtMillis : flat.writtenAt,
          receivedAtMillis);
      return;
    }
    JsonNode event;
    try {
      event = JSON.readTree(payload);
    } catch (IOException e) {
      synchronized (this) {
        unreadable++;
      }
      return;
    }
    JsonNode aggregate = event.get("aggregate");
    JsonNode seq = event.get("seq");
    JsonNode writtenAt = event.get("written_at");
    if (aggregate == null || seq == null) {
      synchronized (this) {
        unreadable++;
      }
      return;
    }
    record(
        aggregate.asText(),
        seq.asInt(),
        writtenAt == null ? receivedAtMillis : writtenAt.asLong(),
        receivedAtMillis);
  }

  private synchronized void record(
      String aggregate, int seq, long writtenAtMillis, long receivedAtMillis) {
    long waitedMillis = Math.max(0, receivedAtMillis - writtenAtMillis);
    Arrivals a = arrivals.computeIfAbsent(aggregate, k -> new Arrivals());
    if (a.seen.get(seq)) {
      duplicates++;
      return;
    }
    a.seen.set(seq);
    a.arrived(seq);
    delivered++;
    waits.recordValue(Math.min(waitedMillis, waits.getHighestTrackableValue()));
    if (waitedMillis > longestWaitMillis) {
      longestWaitMillis = waitedMillis;
      longestWaitWrittenAt = writtenAtMillis;
    }
    if (seq < a.highest) {
      reordered++;
    } else {
      a.highest = seq;
    }
  }

  /** Messages received, duplicates included. */
  public long received() {
    return received.get();
  }

  /** Distinct events received. */
  public synchronized long delivered() {
    return delivered;
  }

  /** Whether every seq in {@code written} (highest committed seq per aggregate) has arrived. */
  public synchronized boolean hasAll(Map<String, Integer> written) {
    return missing(written) == 0;
  }

  /** How many committed events ({@code written}: highest seq per aggregate) never arrived. */
  public synchronized long missing(Map<String, Integer> written) {
    long missing = 0;
    for (Map.Entry<String, Integer> entry : written.entrySet()) {
      Arrivals a = arrivals.get(entry.getKey());
      int highest = entry.getValue();
      int arrived = a == null ? 0 : a.seen.get(1, highest + 1).cardinality();
      missing += highest - arrived;
    }
    return missing;
  }

  /** Events that arrived though no writer committed them (a seq above the committed one). */
  public synchronized long unexpected(Map<String, Integer> written) {
    long unexpected = 0;
    for (Map.Entry<String, Arrivals> entry : arrivals.entrySet()) {
      int highest = written.getOrDefault(entry.getKey(), 0);
      BitSet seen = entry.getValue().seen;
      unexpected += seen.cardinality() - seen.get(0, highest + 1).cardinality();
    }
    return unexpected;
  }

  /** Deliveries of an event already delivered. */
  public synchronized long duplicates() {
    return duplicates;
  }

  /** First deliveries that came after a higher seq of their aggregate. */
  public synchronized long reordered() {
    return reordered;
  }

  /** Messages without an aggregate and a seq. */
  public synchronized long unreadable() {
    return unreadable;
  }

  /** The longest wait, receipt minus {@code written_at}, of a first delivery. */
  public synchronized long longestWaitMillis() {
    return longestWaitMillis;
  }

  /** When (epoch millis) the event that waited longest was written: which fault it met. */
  public synchronized long longestWaitWrittenAt() {
    return longestWaitWrittenAt;
  }

  /**
   * The wait (commit to checker, ms) that {@code percentile} of first deliveries did not exceed.
   */
  public synchronized long waitPercentileMillis(double percentile) {
    return waits.getValueAtPercentile(percentile);
  }

  /** Whether {@code seq} of {@code aggregate} has arrived. */
  public synchronized boolean isDelivered(String aggregate, int seq) {
    Arrivals a = arrivals.get(aggregate);
    return a != null && seq >= 0 && a.seen.get(seq);
  }

  /**
   * Per aggregate, the seqs in the order they first arrived (duplicates left out): for a check of
   * the order against something the checker learns only at the end, e.g. the order the writers
   * committed (a copy).
   */
  public synchronized Map<String, int[]> firstDeliveryOrder() {
    Map<String, int[]> order = new HashMap<>();
    arrivals.forEach((aggregate, a) -> order.put(aggregate, Arrays.copyOf(a.order, a.count)));
    return order;
  }

  private static final class Arrivals {
    final BitSet seen = new BitSet();
    int highest;
    int[] order = new int[4];
    int count;

    void arrived(int seq) {
      if (count == order.length) {
        order = Arrays.copyOf(order, count * 2);
      }
      order[count++] = seq;
    }
  }
}
