package dev.pgoutbox.example.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.relay.OutboxMessage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a scenario's publisher received, in delivery order, and the independent check of it: every
 * event carries {@code {"aggregate": a, "seq": n}}; each aggregate's first deliveries must come in
 * seq order, every written seq must arrive, repeats are duplicates.
 */
final class Deliveries {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final ConcurrentLinkedQueue<OutboxMessage> received = new ConcurrentLinkedQueue<>();

  void addAll(List<OutboxMessage> batch) {
    received.addAll(batch);
  }

  int size() {
    return received.size();
  }

  /** The verdict: lost, reordered, duplicates, given the highest seq written per aggregate. */
  Check check(Map<String, Integer> written) {
    Map<String, Integer> highest = new HashMap<>();
    Set<String> seen = new HashSet<>();
    long reordered = 0;
    long duplicates = 0;
    for (OutboxMessage message : received) {
      JsonNode payload = parse(message.payload());
      String aggregate = payload.get("aggregate").asText();
      int seq = payload.get("seq").asInt();
      if (!seen.add(aggregate + "#" + seq)) {
        duplicates++;
        continue;
      }
      if (seq < highest.getOrDefault(aggregate, 0)) {
        reordered++;
      } else {
        highest.put(aggregate, seq);
      }
    }
    long lost = 0;
    for (Map.Entry<String, Integer> entry : written.entrySet()) {
      for (int seq = 1; seq <= entry.getValue(); seq++) {
        if (!seen.contains(entry.getKey() + "#" + seq)) {
          lost++;
        }
      }
    }
    return new Check(lost, reordered, duplicates);
  }

  record Check(long lost, long reordered, long duplicates) {
    void into(Result result) {
      result.put("lost", lost).put("reordered", reordered).put("duplicates", duplicates);
    }
  }

  private static JsonNode parse(String json) {
    try {
      return JSON.readTree(json);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
