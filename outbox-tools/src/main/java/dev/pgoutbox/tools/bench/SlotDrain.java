package dev.pgoutbox.tools.bench;

import dev.pgoutbox.relay.ListenConnectionFactory;
import dev.pgoutbox.relay.wal.ReplicationConnections;
import java.nio.ByteBuffer;
import java.sql.Connection;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.replication.PGReplicationStream;

/**
 * Streams a slot through {@code pgoutput} as the WAL relay's reader does, and does nothing else:
 * each message is only counted and its position acknowledged at once (no publish, no completion).
 * Beside the writers it shows what the server's logical decoding and WAL sender alone cost them, to
 * tell that cost from the WAL relay's own work; over a preloaded slot ({@code bench drain --source
 * wal}) it times the fastest any reader of the replication protocol can drain it.
 */
final class SlotDrain {

  private final Connection connection;
  private final PGReplicationStream stream;
  private final Thread reader;
  private final AtomicLong inserts = new AtomicLong();
  private final byte counted;
  private volatile boolean running = true;
  private volatile @Nullable Exception failure;

  private SlotDrain(DataSource dataSource, String slot, String publication, boolean messages)
      throws Exception {
    ListenConnectionFactory connections =
        Objects.requireNonNull(
            ReplicationConnections.derive(dataSource), "no JDBC URL behind the bench's pool");
    this.counted = (byte) (messages ? 'M' : 'I');
    this.connection = connections.open();
    this.stream = ReplicationConnections.startPgOutput(connection, slot, publication, messages);
    this.reader = Thread.ofPlatform().name("bench-slot-drain").start(this::read);
  }

  /** Starts streaming {@code slot} (and {@code publication}) on a thread of its own. */
  static SlotDrain start(DataSource dataSource, String slot, String publication) throws Exception {
    return new SlotDrain(dataSource, slot, publication, false);
  }

  /**
   * {@link #start}, counting logical decoding messages (the message transport's events) instead of
   * inserts when {@code messages}.
   */
  static SlotDrain start(DataSource dataSource, String slot, String publication, boolean messages)
      throws Exception {
    return new SlotDrain(dataSource, slot, publication, messages);
  }

  private void read() {
    try {
      while (running) {
        // As the WAL relay's reader: pgjdbc waits up to 1 ms for data, so this does not spin.
        ByteBuffer message = stream.readPending();
        if (message == null) {
          continue;
        }
        if (message.hasRemaining() && message.get(message.position()) == counted) {
          inserts.incrementAndGet();
        }
        stream.setFlushedLSN(stream.getLastReceiveLSN());
        stream.setAppliedLSN(stream.getLastReceiveLSN());
      }
      stream.close();
    } catch (Exception e) {
      failure = e;
    } finally {
      try {
        connection.close();
      } catch (Exception e) {
        // Closing after a failure: the failure is what is reported.
      }
    }
  }

  /**
   * Inserts into the published table the slot streamed so far (messages, for a drain that counts
   * messages).
   */
  long inserts() {
    return inserts.get();
  }

  /** Stops reading; throws what made the reader fail, if anything did. */
  void stop() throws InterruptedException {
    running = false;
    reader.join(TimeUnit.SECONDS.toMillis(10));
    Exception failed = failure;
    if (failed != null) {
      throw new IllegalStateException("the slot reader failed: " + failed.getMessage(), failed);
    }
  }
}
