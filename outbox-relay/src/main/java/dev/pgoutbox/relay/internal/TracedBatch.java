package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.PublishTracing.Fate;
import dev.pgoutbox.relay.PublishTracing.Outcome;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayListener.EventFailure;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One batch's publish spans, for both relays: started before the publish call, each event's fate
 * recorded as the relay decides it, all ended once. An event whose fate was never recorded (the
 * batch was given up: the relay stopping, a database error) ends as rolled back. A tracing that
 * throws or answers nonsense leaves the batch untraced, never unpublished.
 */
public final class TracedBatch {

  public static final String HELD_BACK =
      "held back: an earlier event of its aggregate failed in this batch";

  private final PublishTracing tracing;
  private final List<OutboxMessage> batch;
  private final PublishTracing.@Nullable BatchTrace trace;
  private final @Nullable Outcome @Nullable [] fates;
  private final RelayLog log;

  private TracedBatch(
      PublishTracing tracing,
      List<OutboxMessage> batch,
      PublishTracing.@Nullable BatchTrace trace,
      RelayLog log) {
    this.tracing = tracing;
    this.batch = batch;
    this.trace = trace;
    this.fates = trace == null ? null : new Outcome[batch.size()];
    this.log = log;
  }

  /** Starts the spans of {@code batch} (none when tracing is off: nothing allocated per event). */
  public static TracedBatch start(
      PublishTracing tracing, List<OutboxMessage> batch, Publisher publisher, RelayLog log) {
    List<OutboxMessage> copy = List.copyOf(batch);
    if (tracing == PublishTracing.NONE) {
      return new TracedBatch(tracing, copy, null, log);
    }
    PublishTracing.BatchTrace trace = null;
    try {
      trace = tracing.start(copy, publisher);
      if (trace == null || !sameEvents(copy, trace.messages())) {
        log.warn(
            "Tracing {} gave no usable trace for a batch (none, or other events or another order);"
                + " publishing it untraced",
            tracing);
        trace = null;
      }
    } catch (RuntimeException e) {
      log.warn("Tracing {} threw {}; publishing the batch untraced", tracing, e.toString());
      trace = null;
    }
    return new TracedBatch(tracing, copy, trace, log);
  }

  /**
   * Whether a trace hands over the batch's own events, in batch order: fates are recorded by index,
   * and the publisher must never get events the relay did not claim, or in another order.
   */
  private static boolean sameEvents(
      List<OutboxMessage> batch, @Nullable List<OutboxMessage> traced) {
    if (traced == null || traced.size() != batch.size()) {
      return false;
    }
    for (int i = 0; i < batch.size(); i++) {
      OutboxMessage message = traced.get(i);
      if (message == null || !message.id().equals(batch.get(i).id())) {
        return false;
      }
    }
    return true;
  }

  /** What to hand the publisher: the messages carrying the spans' context, or the batch as is. */
  public List<OutboxMessage> messages() {
    return trace == null ? batch : trace.messages();
  }

  public void published(int index, PublishResult result) {
    if (fates != null) {
      fates[index] =
          new Outcome(
              Fate.PUBLISHED,
              null,
              false,
              batch.get(index).attempt(),
              Duration.ZERO,
              result instanceof PublishResult.Published p ? p.traceAttributes() : Map.of());
    }
  }

  public void heldBack(int index) {
    if (fates != null) {
      fates[index] =
          new Outcome(Fate.HELD_BACK, HELD_BACK, false, batch.get(index).attempt(), Duration.ZERO);
    }
  }

  public void failed(int index, EventFailure failure, boolean permanent) {
    if (fates != null) {
      fates[index] =
          new Outcome(
              failure.dead() ? Fate.DEAD_LETTERED : Fate.RETRY,
              failure.reason(),
              permanent,
              failure.attempts(),
              failure.retryIn());
    }
  }

  /** Ends every span; an event without a recorded fate was rolled back. */
  public void end() {
    if (trace == null || fates == null) {
      return;
    }
    try {
      for (int i = 0; i < batch.size(); i++) {
        Outcome fate = fates[i];
        trace.end(
            i,
            fate != null
                ? fate
                : new Outcome(
                    Fate.ROLLED_BACK,
                    "the batch was rolled back before this event's fate was recorded",
                    false,
                    batch.get(i).attempt(),
                    Duration.ZERO));
      }
    } catch (RuntimeException e) {
      log.warn("Tracing {} threw {} while ending spans", tracing, e.toString());
    }
  }
}
