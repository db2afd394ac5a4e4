package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.DeliveryChecker;
import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StreamInfo;
import io.nats.client.api.StreamState;
import java.io.IOException;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The chaos checker's reader of a JetStream stream: asks for each sequence number in turn ({@code
 * getMessage}), so it sees exactly the stream's order and keeps no state on the server.
 *
 * <p>Three answers are told apart. "No message found" is the server saying the sequence is not
 * stored yet (or, when later ones are, that the stream lost it: the reader skips it, and the event
 * counts as not delivered). No answer at all means the server is away, or this client's connection
 * stopped sending: jnats 2.24.1 can come out of a reconnect reporting itself connected with its
 * writer stuck in reconnect mode, so every later request times out (nats.java issue #1522; it is
 * what made the chaos run report thousands "lost" after a nats-server restart). After {@link
 * #STALE} without an answer the reader closes its connection and opens a new one. A stream that is
 * gone or was created anew is a checker error.
 */
final class NatsStreamFeed implements CheckerFeed {

  /** How long without any answer before the reader replaces its connection. */
  static final Duration STALE = Duration.ofSeconds(5);

  private static final int NO_MESSAGE_FOUND = 10037;
  private static final int STREAM_NOT_FOUND = 10059;

  private final DeliveryChecker checker;
  private final String stream;
  private final String checkerUrl;
  private final String adminUrl;
  private final Failure failure = new Failure();
  private final AtomicLong replacedConnections = new AtomicLong();
  private final AtomicLong skipped = new AtomicLong();
  private final ZonedDateTime created;
  private volatile long next = 1;
  private volatile long lastAnswerNanos = System.nanoTime();
  private volatile boolean closing;
  private volatile @Nullable Connection connection;
  private final Thread thread;

  /**
   * Starts reading {@code stream} from sequence 1 through {@code checkerUrl}; {@code adminUrl}
   * answers the verdict's questions on fresh connections (the same server, unproxied).
   */
  NatsStreamFeed(DeliveryChecker checker, String stream, String checkerUrl, String adminUrl)
      throws IOException, JetStreamApiException, InterruptedException {
    this.checker = checker;
    this.stream = stream;
    this.checkerUrl = checkerUrl;
    this.adminUrl = adminUrl;
    this.created = streamInfo().getCreateTime();
    this.connection = connect();
    this.thread = Thread.ofPlatform().name("chaos-checker-nats").start(this::run);
  }

  private Connection connect() throws IOException, InterruptedException {
    return Nats.connect(
        new Options.Builder()
            .server(checkerUrl)
            .maxReconnects(-1)
            .connectionName("pgoutbox-chaos-checker")
            // The outage is planned; what the reader cannot read shows in readError.
            .errorListener(new ErrorListener() {})
            .build());
  }

  private void run() {
    long notFoundSince = 0;
    try {
      while (!closing) {
        Connection c = connection;
        try {
          if (c == null) {
            c = connect();
            connection = c;
          }
          JetStreamManagement management = c.jetStreamManagement();
          try {
            MessageInfo message = management.getMessage(stream, next);
            answered();
            checker.receive(message.getData(), System.currentTimeMillis());
            next++;
            notFoundSince = 0;
          } catch (JetStreamApiException e) {
            answered();
            if (e.getApiErrorCode() == STREAM_NOT_FOUND) {
              failure.set("stream " + stream + " is gone (" + e.getMessage() + ")");
              return;
            }
            if (e.getApiErrorCode() == NO_MESSAGE_FOUND) {
              long now = System.nanoTime();
              if (notFoundSince == 0) {
                notFoundSince = now;
              } else if (now - notFoundSince > TimeUnit.SECONDS.toNanos(1)) {
                skipIfLost(management);
                notFoundSince = 0;
              }
            }
            pause();
          }
        } catch (IOException | IllegalStateException e) {
          // No answer: the server is away, or this connection no longer sends (see above).
          if (System.nanoTime() - lastAnswerNanos > STALE.toNanos()) {
            replaceConnection();
          }
          pause();
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (RuntimeException | Error e) {
      failure.set("the checker's NATS reader failed: " + e);
      throw e;
    }
  }

  private void answered() {
    lastAnswerNanos = System.nanoTime();
  }

  /**
   * {@code next} has been "not found" for a while. The stream's state is read first, then the
   * message asked for again: still missing while the stream holds later sequences means the stream
   * lost it (or it was deleted), so the reader moves past it.
   */
  private void skipIfLost(JetStreamManagement management) throws IOException {
    StreamState state;
    try {
      state = management.getStreamInfo(stream).getStreamState();
    } catch (JetStreamApiException e) {
      return; // asked again on the next "not found"; a stream that is gone fails getMessage
    }
    if (next < state.getFirstSequence()) {
      skipped.addAndGet(state.getFirstSequence() - next);
      next = state.getFirstSequence();
    } else if (next <= state.getLastSequence()) {
      try {
        management.getMessage(stream, next);
      } catch (JetStreamApiException e) {
        if (e.getApiErrorCode() == NO_MESSAGE_FOUND) {
          skipped.incrementAndGet();
          next++;
        }
      }
    }
  }

  private void replaceConnection() throws InterruptedException {
    Connection old = connection;
    connection = null;
    replacedConnections.incrementAndGet();
    answered(); // the new connection gets its own STALE
    if (old != null) {
      old.close();
    }
  }

  private static void pause() {
    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
  }

  private StreamInfo streamInfo() throws IOException, JetStreamApiException, InterruptedException {
    Connection admin =
        Nats.connect(new Options.Builder().server(adminUrl).maxReconnects(0).build());
    try {
      return admin.jetStreamManagement().getStreamInfo(stream);
    } finally {
      admin.close();
    }
  }

  @Override
  public @Nullable String readError(Duration grace) throws InterruptedException {
    String failed = failure.get();
    if (failed != null) {
      return failed;
    }
    if (!thread.isAlive()) {
      return "the checker's NATS reader stopped";
    }
    StreamInfo info;
    try {
      info = streamInfo();
    } catch (IOException | JetStreamApiException e) {
      return "could not ask nats-server for stream " + stream + "'s state: " + e.getMessage();
    }
    if (!info.getCreateTime().equals(created)) {
      return "stream " + stream + " was created anew during the run";
    }
    long last = info.getStreamState().getLastSequence();
    if (CheckerFeed.await(() -> next > last || failure.get() != null, grace)) {
      return failure.get();
    }
    return "read stream "
        + stream
        + " up to sequence "
        + (next - 1)
        + " of "
        + last
        + "; no answer for "
        + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lastAnswerNanos)
        + " ms";
  }

  @Override
  public boolean failed() {
    return failure.get() != null;
  }

  @Override
  public Map<String, Object> figures() {
    return Map.of(
        "checker_reconnects", replacedConnections.get(), "checker_skipped", skipped.get());
  }

  @Override
  public void close() {
    closing = true;
    thread.interrupt();
    try {
      thread.join();
      Connection c = connection;
      if (c != null) {
        c.close();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
