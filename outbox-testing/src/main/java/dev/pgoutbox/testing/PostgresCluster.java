package dev.pgoutbox.testing;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A PostgreSQL cluster run from the machine's own binaries ({@code initdb}, {@code pg_ctl}, {@code
 * pg_basebackup} of {@link #binaries()}), for what the embedded server cannot give: a streaming
 * standby cloned with {@code pg_basebackup -R}, then promoted.
 *
 * <pre>{@code
 * try (PostgresCluster primary = PostgresCluster.startPrimary(Map.of("wal_level", "logical"));
 *     PostgresCluster standby = primary.startStandby("standby1", true)) {
 *   ... // write through primary.jdbcUrl()
 *   primary.crash();
 *   standby.promote();
 * }
 * }</pre>
 *
 * <p>PostgreSQL refuses to run as root: when this JVM runs as root, every command runs as the
 * {@code postgres} OS user ({@code runuser -u postgres --}) on a data directory that user owns.
 * Each cluster listens on a free loopback port with {@code trust} authentication, user {@code
 * postgres}. Thread-safe; {@link #close()} stops it at once and deletes its directory.
 */
public final class PostgresCluster implements TestServer, AutoCloseable {

  /** Environment variable naming the directory of the binaries (default {@link #DEFAULT_BIN}). */
  public static final String BIN_VARIABLE = "PGOUTBOX_TEST_PG_BIN";

  /** The binaries used when {@value #BIN_VARIABLE} is not set: Debian's PostgreSQL 15. */
  public static final Path DEFAULT_BIN = Path.of("/usr/lib/postgresql/15/bin");

  private static final Logger LOG = LoggerFactory.getLogger(PostgresCluster.class);
  private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(120);

  private final Path bin;
  private final Path root;
  private final Path data;
  private final int port;
  private final String name;
  private boolean running;
  private boolean closed;

  private PostgresCluster(Path bin, Path root, int port, String name) {
    this.bin = bin;
    this.root = root;
    this.data = root.resolve("data");
    this.port = port;
    this.name = name;
  }

  /**
   * The directory of the binaries: {@value #BIN_VARIABLE}, else {@link #DEFAULT_BIN}, else the
   * newest {@code /usr/lib/postgresql/<version>/bin} that has them (Debian's layout).
   *
   * @throws IllegalStateException naming the variable when none has {@code initdb}
   */
  public static Path binaries() {
    String configured = System.getenv(BIN_VARIABLE);
    List<Path> candidates = new ArrayList<>();
    if (configured != null && !configured.isBlank()) {
      candidates.add(Path.of(configured));
    } else {
      candidates.add(DEFAULT_BIN);
      try (var versions = Files.list(Path.of("/usr/lib/postgresql"))) {
        versions
            .map(v -> v.resolve("bin"))
            .sorted(
                java.util.Comparator.comparingInt(
                        (Path b) -> {
                          String v = b.getParent().getFileName().toString();
                          return v.matches("\\d+") ? Integer.parseInt(v) : 0;
                        })
                    .reversed())
            .forEach(candidates::add);
      } catch (IOException e) {
        // No Debian layout: only the default.
      }
    }
    for (Path bin : candidates) {
      if (Files.isExecutable(bin.resolve("initdb"))) {
        return bin;
      }
    }
    throw new IllegalStateException(
        "no PostgreSQL binaries (initdb, pg_ctl, pg_basebackup) in "
            + candidates
            + ": install them (Debian: postgresql) or set "
            + BIN_VARIABLE
            + " to their directory");
  }

  /**
   * Initializes and starts a primary on a free port with {@code settings} (e.g. {@code wal_level =
   * logical}) besides room for ten WAL senders and replication slots.
   *
   * @throws IllegalStateException with the command's output when a step fails
   */
  public static PostgresCluster startPrimary(Map<String, String> settings) {
    PostgresCluster cluster =
        new PostgresCluster(binaries(), ownedTempDir(), freePort(), "primary");
    cluster.run(
        List.of(
            cluster.tool("initdb"),
            "-D",
            cluster.data.toString(),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync"));
    StringBuilder conf = new StringBuilder();
    Map.of("max_wal_senders", "10", "max_replication_slots", "10", "fsync", "off")
        .forEach((k, v) -> conf.append(k).append(" = '").append(v).append("'\n"));
    requireNonNull(settings, "settings")
        .forEach((k, v) -> conf.append(k).append(" = '").append(v).append("'\n"));
    cluster.appendConf(conf.toString());
    cluster.start();
    return cluster;
  }

  /**
   * Clones this running cluster with {@code pg_basebackup -R} into a streaming standby named {@code
   * applicationName} on a free port, and starts it. When {@code synchronous}, this primary then
   * waits for it at every commit ({@code synchronous_standby_names}), so that every commit a client
   * saw succeed is on the standby when it is promoted; this method returns once it is in sync.
   */
  public PostgresCluster startStandby(String applicationName, boolean synchronous) {
    PostgresCluster standby = new PostgresCluster(bin, ownedTempDir(), freePort(), applicationName);
    standby.run(
        List.of(
            tool("pg_basebackup"),
            "-h",
            "127.0.0.1",
            "-p",
            Integer.toString(port),
            "-U",
            "postgres",
            "-D",
            standby.data.toString(),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-sync"));
    standby.appendConf(
        "primary_conninfo = 'host=127.0.0.1 port="
            + port
            + " user=postgres application_name="
            + applicationName
            + "'\nhot_standby = 'on'\n");
    standby.start();
    if (synchronous) {
      execute("ALTER SYSTEM SET synchronous_standby_names = '" + applicationName + "'");
      execute("SELECT pg_reload_conf()");
      Eventually.await(
          "standby " + applicationName + " in sync",
          Duration.ofSeconds(60),
          () ->
              "sync"
                  .equals(
                      query(
                          "select sync_state from pg_stat_replication where application_name = '"
                              + applicationName
                              + "'")));
    }
    return standby;
  }

  /** Promotes this standby to a primary and waits until it accepts writes. */
  public void promote() {
    run(List.of(tool("pg_ctl"), "-D", data.toString(), "-w", "-t", "60", "promote"));
    Eventually.await(
        name + " promoted",
        Duration.ofSeconds(60),
        () -> "f".equals(query("select pg_is_in_recovery()")));
    LOG.info("PostgreSQL cluster {} promoted (port {})", name, port);
  }

  /** Stops the server at once ({@code pg_ctl stop -m immediate}): as a crash, no checkpoint. */
  public synchronized void crash() {
    if (running) {
      run(List.of(tool("pg_ctl"), "-D", data.toString(), "-m", "immediate", "-w", "stop"));
      running = false;
      LOG.info("PostgreSQL cluster {} stopped (immediate)", name);
    }
  }

  /** Whether the server is a standby (in recovery). */
  public boolean inRecovery() {
    return "t".equals(query("select pg_is_in_recovery()"));
  }

  /** The loopback port the server listens on. */
  public int port() {
    return port;
  }

  /** JDBC URL of the {@code postgres} database as user {@code postgres}. */
  @Override
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=postgres";
  }

  /** Runs {@code sql} on the {@code postgres} database. */
  public void execute(String sql) {
    try (Connection c = DriverManager.getConnection(jdbcUrl(), new Properties());
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(name + ": " + sql + " failed: " + e.getMessage(), e);
    }
  }

  /** The first column of the first row of {@code sql}, as text; null when no row or NULL. */
  public String query(String sql) {
    try (Connection c = DriverManager.getConnection(jdbcUrl(), new Properties());
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      return rs.next() ? rs.getString(1) : null;
    } catch (SQLException e) {
      throw new IllegalStateException(name + ": " + sql + " failed: " + e.getMessage(), e);
    }
  }

  /** Stops the server at once if it runs and deletes its directory. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      crash();
    } catch (RuntimeException e) {
      LOG.warn("PostgreSQL cluster {} did not stop: {}", name, e.toString());
    }
    Files2.deleteRecursively(root);
  }

  private synchronized void start() {
    run(
        List.of(
            tool("pg_ctl"),
            "-D",
            data.toString(),
            "-l",
            root.resolve("server.log").toString(),
            "-w",
            "-t",
            "60",
            "start"));
    running = true;
    LOG.info("PostgreSQL cluster {} started: {} (data in {})", name, jdbcUrl(), data);
  }

  private void appendConf(String lines) {
    String all =
        lines
            + "port = "
            + port
            + "\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '"
            + root
            + "'\n";
    try {
      Files.writeString(
          data.resolve("postgresql.auto.conf"),
          all,
          StandardCharsets.UTF_8,
          StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private String tool(String tool) {
    return bin.resolve(tool).toString();
  }

  /** Runs a command (as {@code postgres} when this JVM is root); fails with its output. */
  private void run(List<String> command) {
    List<String> full = new ArrayList<>();
    if (runsAsRoot()) {
      full.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    full.addAll(command);
    Path output = root.resolve("command.log");
    try {
      Process process =
          new ProcessBuilder(full)
              .redirectErrorStream(true)
              .redirectOutput(output.toFile())
              .start();
      if (!process.waitFor(COMMAND_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
        process.destroyForcibly();
        throw new IllegalStateException(
            name + ": " + String.join(" ", command) + " did not finish in " + COMMAND_TIMEOUT);
      }
      if (process.exitValue() != 0) {
        throw new IllegalStateException(
            name
                + ": "
                + String.join(" ", command)
                + " exited with "
                + process.exitValue()
                + ": "
                + Files.readString(output));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(name + ": could not run " + command, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(name + ": interrupted running " + command, e);
    }
  }

  private static boolean runsAsRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  /** A new directory in the temp dir, owned by {@code postgres} when this JVM is root. */
  private static Path ownedTempDir() {
    try {
      Path dir =
          Files.createTempDirectory(
              "pgoutbox-cluster",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      if (runsAsRoot()) {
        UserPrincipal postgres =
            dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postgres");
        Files.setOwner(dir, postgres);
      }
      return dir;
    } catch (IOException e) {
      throw new UncheckedIOException("could not make a directory for a PostgreSQL cluster", e);
    }
  }

  private static int freePort() {
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free port", e);
    }
  }

  @Override
  public String toString() {
    return "PostgresCluster[" + name + ", port " + port + ", data " + data + "]";
  }
}
