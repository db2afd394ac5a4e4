package dev.pgoutbox.relay;

import dev.pgoutbox.relay.testing.RecordingPublisher;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** Publishes through a recording publisher until it delivered {@code after}, then never answers. */
final class StallingPublisher implements Publisher {
  final RecordingPublisher delegate = new RecordingPublisher();
  private final int after;
  volatile boolean stalled;

  StallingPublisher(int after) {
    this.after = after;
  }

  @Override
  public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    if (delegate.delivered().size() >= after) {
      stalled = true;
      return new CompletableFuture<>();
    }
    return delegate.publish(batch);
  }
}
