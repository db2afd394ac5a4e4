package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayListener;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.jspecify.annotations.Nullable;

/**
 * One relay's batch durations (claim to commit, from its {@code onBatch} reports), and the claim's
 * share of each: from the batch's start to the publisher's call. A relay runs one batch at a time,
 * so the publisher call a batch report follows is that batch's. The recorders may be shared by
 * several relays' timers.
 */
final class BatchTimer implements RelayListener {

  private final Recorder batches;
  private final Recorder claims;
  private volatile long lastPublishCall = Long.MIN_VALUE;

  BatchTimer(Recorder batches, Recorder claims) {
    this.batches = batches;
    this.claims = claims;
  }

  /** Recorders of microseconds, for the timers of a run. */
  static Recorder recorder() {
    return new Recorder(Micros.HIGHEST, 3);
  }

  /** Reads a recorder's interval histogram. */
  static Histogram interval(Recorder recorder) {
    return recorder.getIntervalHistogram();
  }

  @Override
  public void onBatch(BatchReport report) {
    long end = System.nanoTime();
    long duration = report.duration().toNanos();
    long start = end - duration;
    long call = lastPublishCall;
    long claim = call >= start && call <= end ? call - start : duration;
    batches.recordValue(Micros.of(duration));
    claims.recordValue(Micros.of(claim));
  }

  /** {@code publisher}, noting when this relay calls it. */
  Publisher wrap(Publisher publisher) {
    return new Publisher() {
      @Override
      public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
        lastPublishCall = System.nanoTime();
        return publisher.publish(batch);
      }

      @Override
      public String messagingSystem() {
        return publisher.messagingSystem();
      }

      @Override
      public @Nullable String destination(OutboxMessage message) {
        return publisher.destination(message);
      }

      @Override
      public Map<String, Object> traceAttributes(OutboxMessage message) {
        return publisher.traceAttributes(message);
      }

      @Override
      public void close() {
        publisher.close();
      }
    };
  }
}
