package dev.pgoutbox.relay.wal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.relay.Completion;
import dev.pgoutbox.relay.internal.RelayLog;
import dev.pgoutbox.relay.testing.EventRows;
import dev.pgoutbox.testing.Eventually;
import dev.pgoutbox.testing.Signals;
import dev.pgoutbox.testing.TestSchema;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The WAL relay's completer on a real PostgreSQL: the LSN the reader may confirm to the slot never
 * passes a completion whose commit is not on disk. Needs the embedded server (its WAL writer is
 * stopped with SIGSTOP to hold an asynchronous commit off the disk).
 */
class WalCompleterIT {

  @RegisterExtension static final TestSchema db = TestSchema.migratedWithLogicalDecoding(4);

  /**
   * With {@code synchronousCommit} off, a completion's commit returns before its record is on disk;
   * a server crash then undoes it. The completer used to settle its LSN at once (the reader then
   * confirmed the slot past the rows, and a crash left them pending, never streamed again). The WAL
   * writer is stopped, so nothing flushes the completion: the completer holds its LSN, and the LSN
   * of work queued after it, until the WAL is on disk, then settles both. It stops the server's WAL
   * writer with a signal, so the server must run on this machine (the embedded one does); a remote
   * server fails the test at that step, naming the signal.
   */
  @Test
  void anAsynchronousCompletionIsConfirmedOnlyOnceItsCommitIsOnDisk() throws Exception {
    db.execute("truncate outbox_events");
    db.execute("alter table outbox_events set (autovacuum_enabled = false)");
    EventRows.insert(db.dsl(), "a-1", 1);
    long position = db.queryLong("select max(position) from outbox_events");
    ScheduledExecutorService executor =
        Executors.newScheduledThreadPool(1, Thread.ofPlatform().daemon(true).factory());
    long walWriter =
        db.queryLong("select pid from pg_stat_activity where backend_type = 'walwriter'");
    WalCompleter completer =
        new WalCompleter(
            executor,
            db.dataSource(),
            db.schema(),
            Completion.MARK_PROCESSED,
            false,
            "wal-completer-it",
            Duration.ofSeconds(1),
            new RelayLog("wal-completer-it"));
    Signals.send("STOP", List.of(walWriter));
    try {
      // Everything written so far is on disk (the insert above committed synchronously).
      long before = walInserted();
      completer.submit(new long[] {position}, Set.of(), 1_000);
      Eventually.await(
          "the completion committed",
          () ->
              db.queryLong("select count(*) from outbox_events where processed_at is not null")
                  == 1);
      // Work queued after it, done after it: once it is done, the completion's turn has passed.
      completer.submit(new long[0], Set.of(), 2_000);
      Eventually.await("the later work done", () -> completer.backlog() == 0);

      long confirmed = completer.confirmedLsn();
      // Read after it: if the completion's LSN was confirmed, its commit (written after `before`)
      // was on disk by then, and the flushed WAL, which only grows, is past `before` now. With
      // the WAL writer stopped nothing else flushes it but a checkpoint or another session's
      // synchronous commit, so the check that fails on the code before (confirmed at once) bites.
      long flushed = walFlushed();
      assertThat(confirmed == 0 || flushed > before)
          .as(
              "settled (%d) while the completion's commit is not on disk (flushed %d <= %d)",
              confirmed, flushed, before)
          .isTrue();
    } finally {
      Signals.send("CONT", List.of(walWriter));
    }
    Eventually.await("both settled once on disk", () -> completer.confirmedLsn() == 2_000);
    completer.stop();
    executor.shutdownNow();
  }

  private static long walInserted() {
    return db.queryLong("select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint");
  }

  private static long walFlushed() {
    return db.queryLong("select pg_wal_lsn_diff(pg_current_wal_flush_lsn(), '0/0')::bigint");
  }
}
