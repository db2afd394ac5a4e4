package dev.pgoutbox.example.bench;

import dev.pgoutbox.relay.OutboxMessage;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Wraps payloads read by a scenario's own SQL as messages, for the delivery check. */
final class NaiveMessages {

  private NaiveMessages() {}

  static List<OutboxMessage> of(List<String> payloads) {
    List<OutboxMessage> messages = new ArrayList<>(payloads.size());
    for (String payload : payloads) {
      messages.add(
          new OutboxMessage(
              UUID.randomUUID(),
              0,
              "order",
              "?",
              "order.step",
              payload,
              Map.of(),
              1,
              Instant.EPOCH));
    }
    return messages;
  }
}
