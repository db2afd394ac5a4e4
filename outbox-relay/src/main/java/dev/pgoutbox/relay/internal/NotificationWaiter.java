package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.ListenConnectionFactory;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
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
    long timeoutMillis = Math.max(1, timeout.toMillis());
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
        return true;
      }
      return false;
    } catch (SQLException e) {
      log.warn("LISTEN connection lost ({}); reconnecting", e.getMessage());
      closeConnection();
      nextConnectNanos = System.nanoTime();
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
   */
  public int drain() {
    if (pg == null) {
      return 0;
    }
    try {
      PGNotification[] notifications = pg.getNotifications();
      return notifications == null ? 0 : notifications.length;
    } catch (SQLException e) {
      log.warn("LISTEN connection lost ({}); reconnecting", e.getMessage());
      closeConnection();
      nextConnectNanos = System.nanoTime();
      return 0;
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
