package dev.pgoutbox.example.bench;

import dev.pgoutbox.example.verify.DeliveryChecker;
import dev.pgoutbox.relay.OutboxMessage;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What a scenario's publisher received, in delivery order, checked once the run is over (so the
 * check costs the measured run nothing) by the same {@link DeliveryChecker} as the chaos run.
 */
final class Deliveries {

  private final ConcurrentLinkedQueue<OutboxMessage> received = new ConcurrentLinkedQueue<>();

  void addAll(List<OutboxMessage> batch) {
    received.addAll(batch);
  }

  int size() {
    return received.size();
  }

  /** The verdict: lost, reordered, duplicates, given the highest seq written per aggregate. */
  Check check(Map<String, Integer> written) {
    DeliveryChecker checker = new DeliveryChecker();
    for (OutboxMessage message : received) {
      checker.receive(message.payloadBytes(), 0);
    }
    return new Check(checker.missing(written), checker.reordered(), checker.duplicates());
  }

  record Check(long lost, long reordered, long duplicates) {
    void into(Result result) {
      result.put("lost", lost).put("reordered", reordered).put("duplicates", duplicates);
    }
  }
}
