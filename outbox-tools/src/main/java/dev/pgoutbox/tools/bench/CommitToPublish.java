package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.OutboxMessage;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

/**
 * Commit-to-publish times of a long run, without keeping an entry per event: a commit waits in the
 * map only until its publish arrives, and the time goes into a recorder read interval by interval.
 * A relay can see a commit before the writer's thread records it: that publish waits for its commit
 * instead, and counts as 0 (as in {@code bench latency}).
 */
final class CommitToPublish {

  private record Stamp(long nanos, boolean published) {}

  private final ConcurrentHashMap<UUID, Stamp> waiting = new ConcurrentHashMap<>();
  private final Recorder recorder = new Recorder(Micros.HIGHEST, 3);

  /** A writer committed event {@code id} at {@code nanos}. */
  void committed(UUID id, long nanos) {
    waiting.compute(
        id,
        (key, stamp) -> {
          if (stamp == null) {
            return new Stamp(nanos, false);
          }
          record(0);
          return null;
        });
  }

  /** The publisher delivered {@code batch} at {@code nanos}. */
  void published(List<OutboxMessage> batch, long nanos) {
    for (OutboxMessage message : batch) {
      waiting.compute(
          message.id(),
          (key, stamp) -> {
            if (stamp == null) {
              return new Stamp(nanos, true);
            }
            if (stamp.published()) {
              return stamp; // a second delivery before the commit was recorded
            }
            record(nanos - stamp.nanos());
            return null;
          });
    }
  }

  /** Committed events not published yet. */
  long unpublished() {
    return waiting.values().stream().filter(s -> !s.published()).count();
  }

  /** The times recorded since the last call (microseconds). */
  Histogram interval() {
    return recorder.getIntervalHistogram();
  }

  private void record(long nanos) {
    recorder.recordValue(Micros.of(nanos));
  }
}
