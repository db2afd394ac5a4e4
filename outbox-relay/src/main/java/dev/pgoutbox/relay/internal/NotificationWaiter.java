package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.ListenConnectionFactory;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Waits for the outbox trigger's notifications on a dedicated connection; reconnects with backoff
 * when the connection is lost, and reports a reconnect as a wake-up so the relay polls at once for
 * what it may have missed. Not thread-safe: used by the relay loop only.
 */
public final class NotificationWaiter implements AutoCloseable {

  private static final Duration INITIAL_BACKOFF = Duration.ofMillis(100);
  private static final Duration VALIDATE_EVERY = Duration.ofSeconds(30);

  /**
   * The shortest {@link #await}: 1 ms is pgjdbc's probe, which the LISTEN socket answers at once.
   */
  public static final Duration SHORTEST_WAIT = Duration.ofMillis(2);

  /** {@link #takeLowestAnnounced} when no notification said where its events start. */
  public static final long NONE_ANNOUNCED = Long.MAX_VALUE;

  private final ListenConnectionFactory factory;
  private final String channel;
  private final String applicationName;
  private final RelayLog log;
  private final Duration maxBackoff;
  private Connection connection;
  private PGConnection pg;
  private Duration backoff = INITIAL_BACKOFF;
  private long nextConnectNanos = System.nanoTime();
  private long lastVerifiedNanos = System.nanoTime();
  private boolean everConnected;

  /** The lowest position the notifications read since the last {@link #takeLowestAnnounced}. */
  private long lowestAnnounced = NONE_ANNOUNCED;

  /**
   * A waiter on {@code channel}; connects lazily and names its session {@code applicationName} in
   * {@code pg_stat_activity}, whatever connection factory it was given.
   */
  public NotificationWaiter(
      ListenConnectionFactory factory,
      String channel,
      String applicationName,
      RelayLog log,
      Duration maxBackoff) {
    this.factory = factory;
    this.channel = channel;
    this.applicationName = applicationName;
    this.log = log;
    this.maxBackoff = maxBackoff;
  }

  /**
   * Waits up to {@code timeout} for a notification.
   *
   * @return true when woken (a notification, or a fresh connection after which the relay should
   *     poll), false when the time ran out
   */
  public boolean await(Duration timeout) throws InterruptedException {
    long timeoutMillis = Math.max(SHORTEST_WAIT.toMillis(), timeout.toMillis());
    if (connection == null) {
      long waitNanos = nextConnectNanos - System.nanoTime();
      if (waitNanos > 0) {
        Thread.sleep(Math.min(timeoutMillis, Math.max(1, waitNanos / 1_000_000)));
        return false;
      }
      return connect();
    }
    try {
      if (System.nanoTime() - lastVerifiedNanos > VALIDATE_EVERY.toNanos()) {
        // A half-open TCP connection never errors; a round trip proves the peer is there.
        try (Statement statement = connection.createStatement()) {
          statement.execute("SELECT 1");
        }
        lastVerifiedNanos = System.nanoTime();
      }
      PGNotification[] notifications = pg.getNotifications((int) Math.min(timeoutMillis, 60_000));
      if (Thread.interrupted()) {
        throw new InterruptedException();
      }
      if (notifications != null && notifications.length > 0) {
        lastVerifiedNanos = System.nanoTime();
        note(notifications);
        return true;
      }
      return false;
    } catch (SQLException e) {
      connectionLost(e);
      return false;
    }
  }

  /**
   * Reads, without waiting, the notifications that have arrived, and returns how many there were.
   * The relay calls it between back-to-back full batches: it does not need them then, but unread
   * notifications pile up in the socket and in PostgreSQL's notification queue (one per writer
   * transaction, thousands a second under load), the LISTEN session blocks writing them, and the
   * next wait has to read the whole pile before it returns, which stalled the relay for seconds and
   * lets the queue fill until writers' NOTIFYs fail.
   *
   * <p>"Without waiting" needs the connection's sockets from {@link
   * dev.pgoutbox.relay.ListenSocketFactory}: pgjdbc alone waits up to 1 ms for each next
   * notification, and under a steady stream of commits kept reading for as long as it lasted.
   */
  public int drain() {
    if (pg == null) {
      return 0;
    }
    try {
      PGNotification[] notifications = pg.getNotifications();
      if (notifications == null) {
        return 0;
      }
      note(notifications);
      return notifications.length;
    } catch (SQLException e) {
      connectionLost(e);
      return 0;
    }
  }

  /**
   * Whether a writer may still be committing events whose notification will never come: the trigger
   * lets one committing writer at a time notify (notifying commits cannot share a disk flush), and
   * the others commit silently while it does. The relay asks after every wake-up, before it claims:
   * when no writer is committing, every writer that committed silently is visible to the claim that
   * follows; when one is, the relay claims again shortly, until none is. False without a connection
   * (the relay polls, and claims at once on reconnecting) or when the trigger is off (nothing takes
   * the lock).
   */
  public boolean writersCommitting() {
    if (connection == null) {
      return false;
    }
    try (PreparedStatement check = connection.prepareStatement(Sql.NO_WRITER_COMMITTING)) {
      check.setString(1, channel);
      check.setString(2, channel);
      try (ResultSet result = check.executeQuery()) {
        result.next();
        return !result.getBoolean(1);
      }
    } catch (SQLException e) {
      connectionLost(e);
      return false;
    }
  }

  /**
   * The lowest position announced by the notifications read since the last call, or {@link
   * #NONE_ANNOUNCED}; resets it. The outbox trigger's payload is the lowest position its statement
   * inserted, sent when the writer commits: a relay whose low-water mark rose past a writer that
   * had not committed yet learns here where to look again.
   */
  public long takeLowestAnnounced() {
    long lowest = lowestAnnounced;
    lowestAnnounced = NONE_ANNOUNCED;
    return lowest;
  }

  private void note(PGNotification[] notifications) {
    for (PGNotification notification : notifications) {
      long position = announcedPosition(notification.getParameter());
      if (position < lowestAnnounced) {
        lowestAnnounced = position;
      }
    }
  }

  /**
   * The position a payload announces; {@link #NONE_ANNOUNCED} for an empty payload (the triggers of
   * schema versions 1 to 3) or anything else that is not a position, which only says "look".
   */
  static long announcedPosition(@Nullable String payload) {
    if (payload == null || payload.isEmpty()) {
      return NONE_ANNOUNCED;
    }
    try {
      long position = Long.parseLong(payload);
      return position >= 0 ? position : NONE_ANNOUNCED;
    } catch (NumberFormatException e) {
      return NONE_ANNOUNCED;
    }
  }

  private boolean connect() {
    try {
      Connection opened = factory.open();
      try {
        opened.setAutoCommit(true);
        try (PreparedStatement name = opened.prepareStatement(Sql.SET_APPLICATION_NAME)) {
          name.setString(1, applicationName);
          name.execute();
        }
        try (Statement statement = opened.createStatement()) {
          statement.execute(Sql.listen(channel));
        }
        pg = opened.unwrap(PGConnection.class);
      } catch (SQLException | RuntimeException e) {
        opened.close();
        throw e;
      }
      connection = opened;
      lastVerifiedNanos = System.nanoTime();
      backoff = INITIAL_BACKOFF;
      if (everConnected) {
        log.info(
            "LISTEN connection re-established on channel {}; polling for missed events", channel);
      } else {
        log.debug("Listening on channel {}", channel);
      }
      everConnected = true;
      return true;
    } catch (SQLException | RuntimeException e) {
      log.warn(
          "Cannot open the LISTEN connection ({}); polling meanwhile, retrying in {}",
          e.getMessage(),
          backoff);
      nextConnectNanos = System.nanoTime() + backoff.toNanos();
      backoff =
          backoff.multipliedBy(2).compareTo(maxBackoff) > 0 ? maxBackoff : backoff.multipliedBy(2);
      return false;
    }
  }

  /** Drops the broken connection; the next wait reconnects at once. */
  private void connectionLost(SQLException e) {
    log.warn("LISTEN connection lost ({}); reconnecting", e.getMessage());
    closeConnection();
    nextConnectNanos = System.nanoTime();
  }

  private void closeConnection() {
    Connection current = connection;
    connection = null;
    pg = null;
    if (current != null) {
      try {
        current.close();
      } catch (SQLException ignored) {
        // Already broken.
      }
    }
  }

  @Override
  public void close() {
    closeConnection();
  }
}
