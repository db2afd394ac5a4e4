package dev.pgoutbox.relay.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxMessage;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The independent checker: every event carries {@code {"aggregate": a, "seq": n}} with n counting
 * from 1 per aggregate. Given what was written and what was delivered (in delivery order), it
 * counts events lost, first deliveries out of order within their aggregate, and duplicates.
 */
public final class SequenceChecker {

  private static final ObjectMapper JSON = new ObjectMapper();

  private SequenceChecker() {}

  /** The verdict. */
  public record Report(long written, long delivered, long lost, long reordered, long duplicates) {
    @Override
    public String toString() {
      return "written="
          + written
          + " delivered="
          + delivered
          + " lost="
          + lost
          + " reordered="
          + reordered
          + " duplicates="
          + duplicates;
    }
  }

  /**
   * @param written highest seq written per aggregate (each aggregate has seq 1..n)
   * @param delivered deliveries in order
   */
  public static Report check(Map<String, Integer> written, List<OutboxMessage> delivered) {
    Map<String, Integer> highestSeen = new HashMap<>();
    Set<String> seen = new HashSet<>();
    long reordered = 0;
    long duplicates = 0;
    for (OutboxMessage message : delivered) {
      JsonNode payload = parse(message.payload());
      String aggregate = payload.get("aggregate").asText();
      int seq = payload.get("seq").asInt();
      if (!seen.add(aggregate + "#" + seq)) {
        duplicates++;
        continue;
      }
      int highest = highestSeen.getOrDefault(aggregate, 0);
      if (seq < highest) {
        reordered++;
      } else {
        highestSeen.put(aggregate, seq);
      }
    }
    long expected = 0;
    long lost = 0;
    for (Map.Entry<String, Integer> entry : written.entrySet()) {
      for (int seq = 1; seq <= entry.getValue(); seq++) {
        expected++;
        if (!seen.contains(entry.getKey() + "#" + seq)) {
          lost++;
        }
      }
    }
    return new Report(expected, delivered.size(), lost, reordered, duplicates);
  }

  /** The {@code seq} of an event written with the checker's payload. */
  public static int seqOf(OutboxMessage message) {
    return parse(message.payload()).get("seq").asInt();
  }

  private static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new UncheckedIOException(e);
    }
  }
}
