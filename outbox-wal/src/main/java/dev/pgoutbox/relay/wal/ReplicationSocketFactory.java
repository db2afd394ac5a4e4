package dev.pgoutbox.relay.wal;

import dev.pgoutbox.relay.internal.ProbeAnsweringSocketFactory;
import java.sql.SQLException;

/**
 * The socket factory of the WAL reader's replication connections, named in pgjdbc's {@code
 * socketFactory} connection property (pgjdbc instantiates it by name, hence public; not API).
 *
 * <p>The reader asks pgjdbc for the next message without blocking ({@code readPending()}), and
 * pgjdbc answers "none" only after waiting 1 ms for one. While the slot is idle that wait is the
 * reader's pause between polls, and is kept. Once a decoded transaction is in hand, it is one more
 * millisecond before the transaction is published, on every event. The reader asks through {@link
 * #withoutWaiting} then, and its sockets answer "none" at once from what has been received.
 */
public final class ReplicationSocketFactory extends ProbeAnsweringSocketFactory {

  /** Set on the reader's thread while a read must not wait for a message still to come. */
  private static final ThreadLocal<Boolean> NOT_WAITING = ThreadLocal.withInitial(() -> false);

  /** Instantiated by pgjdbc from its name. */
  public ReplicationSocketFactory() {}

  /** Something that reads from a replication stream. */
  @FunctionalInterface
  interface Read<T> {
    T read() throws SQLException;
  }

  /**
   * Runs {@code read} on this thread with pgjdbc's 1 ms probe answered at once: a message already
   * received is read, and none is waited for.
   */
  static <T> T withoutWaiting(Read<T> read) throws SQLException {
    NOT_WAITING.set(true);
    try {
      return read.read();
    } finally {
      NOT_WAITING.set(false);
    }
  }

  /** Only inside {@link #withoutWaiting}, on its thread. */
  @Override
  protected boolean answerAtOnce() {
    return NOT_WAITING.get();
  }
}
