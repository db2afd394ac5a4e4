package dev.pgoutbox.spring.boot;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;

/** A test double of our own Publisher SPI: records every message and acknowledges it. */
final class RecordingPublisher implements Publisher {

  private final List<OutboxMessage> published = new CopyOnWriteArrayList<>();

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    List<PublishResult> results = new ArrayList<>(batch.size());
    for (OutboxMessage message : batch) {
      published.add(message);
      results.add(PublishResult.published());
    }
    return CompletableFuture.completedFuture(results);
  }

  boolean published(String aggregateId) {
    return published.stream().anyMatch(m -> m.aggregateId().equals(aggregateId));
  }

  List<OutboxMessage> all() {
    return List.copyOf(published);
  }

  @Override
  public void close() {}
}
