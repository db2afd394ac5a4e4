package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.testing.DeliveryChecker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a scenario's publisher received, in delivery order, checked once the run is over by the same
 * {@link DeliveryChecker} as the chaos run. The measured run only keeps each batch's payload
 * strings (one small list per batch, no parsing), so the check takes no CPU from what it measures.
 */
final class Deliveries {

  private final ConcurrentLinkedQueue<List<String>> batches = new ConcurrentLinkedQueue<>();

  /** Records a batch the relay handed to its publisher. */
  void addAll(List<OutboxMessage> batch) {
    List<String> payloads = new ArrayList<>(batch.size());
    for (OutboxMessage message : batch) {
      payloads.add(message.payload());
    }
    batches.add(payloads);
  }

  /** Records payloads read by a scenario's own SQL (the naive relay); the list is kept as is. */
  void addPayloads(List<String> payloads) {
    batches.add(payloads);
  }

  /** The verdict: lost, reordered, duplicates, given the highest seq written per aggregate. */
  Check check(Map<String, Integer> written) {
    DeliveryChecker checker = new DeliveryChecker();
    for (List<String> batch : batches) {
      for (String payload : batch) {
        checker.receive(payload.getBytes(StandardCharsets.UTF_8), 0);
      }
    }
    return new Check(checker.missing(written), checker.reordered(), checker.duplicates());
  }

  /** What the delivery check measured. */
  record Check(long lost, long reordered, long duplicates) {
    void into(Result result) {
      into(result, "");
    }

    /** Puts the three figures, each key prefixed with {@code prefix} (e.g. {@code baseline_}). */
    void into(Result result, String prefix) {
      result
          .put(prefix + "lost", lost)
          .put(prefix + "reordered", reordered)
          .put(prefix + "duplicates", duplicates);
    }
  }
}
