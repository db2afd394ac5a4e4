package dev.pgoutbox.example.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.BitSet;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;

/**
 * The independent checker: fed every message a broker consumer receives, in the broker's order, it
 * knows nothing of the relays or the database. Each payload carries {@code {"aggregate": a, "seq":
 * n, "written_at": millis}}; a seq seen again is a duplicate, a first delivery with a seq below the
 * aggregate's highest so far is a reordering. What the writers committed is compared at the end
 * ({@link #missing}). Thread-safe.
 */
final class Checker {

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

  /** Records one message as received from the broker, {@code receivedAtMillis} epoch millis. */
  void receive(byte[] payload, long receivedAtMillis) {
    received.incrementAndGet();
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
    if (aggregate == null || seq == null || writtenAt == null) {
      synchronized (this) {
        unreadable++;
      }
      return;
    }
    record(aggregate.asText(), seq.asInt(), writtenAt.asLong(), receivedAtMillis);
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
  long received() {
    return received.get();
  }

  /** Distinct events received. */
  synchronized long delivered() {
    return delivered;
  }

  /** Whether every seq in {@code written} (highest committed seq per aggregate) has arrived. */
  synchronized boolean hasAll(Map<String, Integer> written) {
    return missing(written) == 0;
  }

  /** How many committed events ({@code written}: highest seq per aggregate) never arrived. */
  synchronized long missing(Map<String, Integer> written) {
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
  synchronized long unexpected(Map<String, Integer> written) {
    long unexpected = 0;
    for (Map.Entry<String, Arrivals> entry : arrivals.entrySet()) {
      int highest = written.getOrDefault(entry.getKey(), 0);
      BitSet seen = entry.getValue().seen;
      unexpected += seen.cardinality() - seen.get(0, highest + 1).cardinality();
    }
    return unexpected;
  }

  synchronized long duplicates() {
    return duplicates;
  }

  synchronized long reordered() {
    return reordered;
  }

  synchronized long unreadable() {
    return unreadable;
  }

  synchronized long longestWaitMillis() {
    return longestWaitMillis;
  }

  /** When (epoch millis) the event that waited longest was written: which fault it met. */
  synchronized long longestWaitWrittenAt() {
    return longestWaitWrittenAt;
  }

  /**
   * The wait (commit to checker, ms) that {@code percentile} of first deliveries did not exceed.
   */
  synchronized long waitPercentileMillis(double percentile) {
    return waits.getValueAtPercentile(percentile);
  }

  private static final class Arrivals {
    final BitSet seen = new BitSet();
    int highest;
  }
}
