package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.testing.DeliveryChecker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * What a scenario's publisher received, in delivery order, checked by the same {@link
 * DeliveryChecker} as the chaos run. The measured run only keeps each batch's payload strings (one
 * small list per batch, no parsing), so the check takes no CPU from what it measures; a long run
 * ({@code bench soak}) hands them to the checker now and then ({@link #absorb}) so that they do not
 * pile up in memory.
 */
final class Deliveries {

  private final ConcurrentLinkedQueue<List<String>> batches = new ConcurrentLinkedQueue<>();
  private final DeliveryChecker checker = new DeliveryChecker();
  private final Consumer<List<OutboxMessage>> onDelivered;

  Deliveries() {
    this(batch -> {});
  }

  /** Deliveries that also tell {@code onDelivered} of each batch, on the publisher's thread. */
  Deliveries(Consumer<List<OutboxMessage>> onDelivered) {
    this.onDelivered = onDelivered;
  }

  /** Records a batch the relay handed to its publisher (or the broker acknowledged). */
  void addAll(List<OutboxMessage> batch) {
    onDelivered.accept(batch);
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

  /** Hands what arrived so far to the checker, in delivery order, and forgets the payloads. */
  synchronized void absorb() {
    for (List<String> batch = batches.poll(); batch != null; batch = batches.poll()) {
      for (String payload : batch) {
        checker.receive(payload.getBytes(StandardCharsets.UTF_8), 0);
      }
    }
  }

  /** The verdict: lost, reordered, duplicates, given the highest seq written per aggregate. */
  synchronized Check check(Map<String, Integer> written) {
    absorb();
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
