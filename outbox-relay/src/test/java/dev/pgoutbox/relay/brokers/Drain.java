package dev.pgoutbox.relay.brokers;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Drives a publisher the way a strict relay would, without a database: a batch is published, and
 * what failed retryably is published again (in batch order) until everything in it is published,
 * before the next batch starts; so an aggregate's order is kept across retries.
 */
public final class Drain {

  private int retryable;
  private final List<String> reasons = new ArrayList<>();

  /** Publishes every batch until all its events are published, or fails at {@code deadline}. */
  public Drain all(Publisher publisher, List<List<OutboxMessage>> batches, Duration deadline)
      throws Exception {
    Instant until = Instant.now().plus(deadline);
    for (List<OutboxMessage> batch : batches) {
      List<OutboxMessage> pending = batch;
      while (!pending.isEmpty()) {
        assertThat(Instant.now())
            .as("deadline to publish, last reasons %s", lastReasons())
            .isBefore(until);
        List<PublishResult> results =
            publisher.publish(pending).toCompletableFuture().get(5, TimeUnit.MINUTES);
        assertThat(results).hasSize(pending.size());
        List<OutboxMessage> again = new ArrayList<>();
        for (int i = 0; i < results.size(); i++) {
          PublishResult r = results.get(i);
          if (r instanceof PublishResult.Permanent p) {
            throw new AssertionError(
                "unexpected permanent failure of " + pending.get(i).id() + ": " + p.reason());
          }
          if (r instanceof PublishResult.Retryable rt) {
            retryable++;
            if (reasons.size() < 1000) {
              reasons.add(rt.reason());
            }
            again.add(pending.get(i));
          }
        }
        pending = again;
      }
    }
    return this;
  }

  /** How many retryable answers the drain got. */
  public int retryable() {
    return retryable;
  }

  /** The reasons of the retryable answers (the first thousand). */
  public List<String> reasons() {
    return reasons;
  }

  private List<String> lastReasons() {
    return reasons.subList(Math.max(0, reasons.size() - 3), reasons.size());
  }
}
