package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishTracing;
import dev.pgoutbox.relay.Publisher;
import dev.pgoutbox.relay.RelayConfig;
import dev.pgoutbox.relay.RelayListener;
import dev.pgoutbox.relay.internal.ClaimedRow;
import dev.pgoutbox.relay.internal.Marker;
import dev.pgoutbox.relay.internal.PublishStep;
import dev.pgoutbox.relay.internal.RelayLog;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * The reader's publishing of a batch read: publishes what is due, parks failures and what waits
 * behind them, submits the published rows to the completer and reports.
 */
final class WalBatchPublisher {

  private final Publisher publisher;
  private final PublishTracing tracing;
  private final RelayConfig config;
  private final RelayListener listener;
  private final RelayLog log;
  private final WalParking parking;
  private final WalUnseen unseen;
  private final WalCompleter completer;

  /** The highest LSN submitted to the completer to acknowledge. */
  private long submittedAck;

  /** The publishing of the reader that parks with {@code parking}. */
  WalBatchPublisher(
      Publisher publisher,
      PublishTracing tracing,
      RelayConfig config,
      RelayListener listener,
      RelayLog log,
      WalParking parking,
      WalUnseen unseen,
      WalCompleter completer) {
    this.publisher = publisher;
    this.tracing = tracing;
    this.config = config;
    this.listener = listener;
    this.log = log;
    this.parking = parking;
    this.unseen = unseen;
    this.completer = completer;
  }

  /** The highest LSN submitted to the completer to acknowledge. */
  long submittedAck() {
    return submittedAck;
  }

  /** A read with no rows: has the completer acknowledge {@code ackLsn} once what is before it. */
  void submitEmpty(long ackLsn) {
    if (ackLsn > submittedAck) {
      completer.submit(new long[0], Set.of(), ackLsn);
      submittedAck = ackLsn;
    }
  }

  /** Publishes {@code taken}, then acknowledges {@code ackLsn} through the completer. */
  void publish(WalBatch.Taken taken, long ackLsn, @Nullable WalMessages walMessages)
      throws SQLException, InterruptedException {
    List<ClaimedRow> rowsRead = taken.rows();
    Map<Long, Long> commitLsns = taken.commitLsns();
    Set<Integer> writers = taken.writers();
    long started = System.nanoTime();
    Set<ClaimedRow.AggregateKey> stillParked = parking.stillParked(rowsRead);
    PublishStep step = new PublishStep(config, rowsRead.size());
    List<Long> park = new ArrayList<>();
    for (ClaimedRow row : rowsRead) {
      if (stillParked.contains(row.aggregate()) || step.isStopped(row.aggregate())) {
        park.add(row.position());
        step.heldBack();
        continue;
      }
      if (unseen.behind(row)) {
        // An older row of its aggregate, pending when the stream attached, has not been read:
        // committed later (with writers not serialized), or skipped by the slot. Handed to the
        // drainer, which follows the commit order, or after a fall-back the position order.
        park.add(row.position());
        step.heldBack();
        step.stop(row.aggregate());
        continue;
      }
      if (!row.due()) {
        // Born dead, parked or waiting for a retry (written by hand): the drainer's, and its
        // aggregate waits behind it as in the table.
        park.add(row.position());
        step.heldBack();
        step.stop(row.aggregate());
        continue;
      }
      if (!step.add(row)) {
        park.add(row.position()); // dead-lettered: parked with its failure
      }
    }
    Answers answers = new Answers(step.messageCount(), park);
    step.publish(publisher, tracing, log, answers);
    List<Marker.Failure> failures = step.failures();
    if (!park.isEmpty()) {
      parking.recordParking(
          failures, park, commitLsns, writers, WalMessages.parked(rowsRead, park), walMessages);
      parking.addAll(step.stopped());
    }
    completer.submit(answers.published(), writers, ackLsn);
    submittedAck = Math.max(submittedAck, ackLsn);
    step.reportEvents(
        listener,
        log,
        "Publish failed (attempt {}), parked for the table relay, retrying in {}: {}");
    listener.onBatch(step.batchReport(Duration.ofNanos(System.nanoTime() - started)));
  }

  /** What the WAL reader does with the answers: completes what was published, parks the rest. */
  private final class Answers implements PublishStep.Answers {
    private final long[] published;
    private final List<Long> park;
    private int publishedCount;

    Answers(int messages, List<Long> park) {
      this.published = new long[messages];
      this.park = park;
    }

    @Override
    public void published(ClaimedRow row, OutboxMessage message) {
      if (!WalMessages.fromMessage(row)) { // a delivered message has no row to complete
        published[publishedCount++] = row.position();
      }
    }

    @Override
    public void orderViolation(OutboxMessage message) {
      listener.onOrderViolation(message);
    }

    @Override
    public void heldBack(ClaimedRow row) {
      park.add(row.position());
    }

    @Override
    public void failed(ClaimedRow row) {
      park.add(row.position());
    }

    /** The positions of the published rows, for the completer. */
    long[] published() {
      return publishedCount == published.length
          ? published
          : Arrays.copyOf(published, publishedCount);
    }
  }
}
