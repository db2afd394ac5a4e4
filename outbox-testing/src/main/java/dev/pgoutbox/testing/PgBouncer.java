package dev.pgoutbox.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A PgBouncer of its own in front of a {@link TestServer}: the machine's {@code pgbouncer} binary
 * ({@code $PGOUTBOX_TEST_PGBOUNCER}, else {@code /usr/sbin/pgbouncer}) on a free loopback port, in
 * transaction pooling mode with a small server pool, so that consecutive transactions of one client
 * land on different server sessions, as they do in production behind it.
 *
 * <pre>{@code
 * try (PgBouncer bouncer = PgBouncer.transactionMode(TestDatabase.get(), 2)) {
 *   HikariConfig config = new HikariConfig();
 *   config.setJdbcUrl(bouncer.jdbcUrl());
 * }
 * }</pre>
 *
 * <p>No binary is no skip: {@link #transactionMode} fails, saying how to install one. Started as
 * root, it runs as {@code postgres} ({@code -u}), as PgBouncer refuses root. {@link #close()} stops
 * it and deletes its files.
 */
public final class PgBouncer implements AutoCloseable {

  private static final Duration START_DEADLINE = Duration.ofSeconds(15);

  private static final Pattern URL =
      Pattern.compile("jdbc:postgresql://([^:/?]+)(?::(\\d+))?/([^?]+)(?:\\?(.*))?");

  private final Path dir;
  private final List<HikariDataSource> pools = new ArrayList<>();
  private final int port;
  private final String database;
  private final String user;
  private final Process process;

  private PgBouncer(Path dir, int port, String database, String user, Process process) {
    this.dir = dir;
    this.port = port;
    this.database = database;
    this.user = user;
    this.process = process;
  }

  /**
   * Starts PgBouncer in {@code pool_mode = transaction} with {@code serverConnections} server
   * sessions in front of {@code server}'s test database, and waits until it accepts connections.
   *
   * @throws IllegalStateException if there is no pgbouncer binary
   * @throws UncheckedIOException if it cannot run or does not listen within 15 s
   */
  public static PgBouncer transactionMode(TestServer server, int serverConnections) {
    Matcher url = URL.matcher(server.jdbcUrl());
    if (!url.matches()) {
      throw new IllegalArgumentException("not a PostgreSQL JDBC URL: " + server.jdbcUrl());
    }
    String host = url.group(1);
    String serverPort = url.group(2) == null ? "5432" : url.group(2);
    String database = url.group(3);
    String user = parameter(url.group(4), "user", "postgres");
    String binary = System.getenv().getOrDefault("PGOUTBOX_TEST_PGBOUNCER", "/usr/sbin/pgbouncer");
    if (!Files.isExecutable(Path.of(binary))) {
      throw new IllegalStateException(
          "No PgBouncer at "
              + binary
              + ": install it (apt-get install pgbouncer) or set PGOUTBOX_TEST_PGBOUNCER to its"
              + " binary");
    }
    try {
      Path dir =
          Files.createTempDirectory(
              "pgoutbox-pgbouncer",
              PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwxrwxrwx")));
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxrwxrwx"));
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort();
      }
      Path ini = dir.resolve("pgbouncer.ini");
      Files.writeString(
          ini,
          String.join(
              "\n",
              "[databases]",
              database
                  + " = host="
                  + host
                  + " port="
                  + serverPort
                  + " dbname="
                  + database
                  + " user="
                  + user,
              "[pgbouncer]",
              "listen_addr = 127.0.0.1",
              "listen_port = " + port,
              "unix_socket_dir =",
              "auth_type = any",
              "pool_mode = transaction",
              "default_pool_size = " + serverConnections,
              "max_client_conn = 200",
              // pgjdbc sends these at start-up; PgBouncer refuses what it does not know.
              "ignore_startup_parameters = extra_float_digits,options",
              "logfile = " + dir.resolve("pgbouncer.log"),
              "pidfile = " + dir.resolve("pgbouncer.pid"),
              ""));
      Files.setPosixFilePermissions(ini, PosixFilePermissions.fromString("rw-r--r--"));
      List<String> command = new ArrayList<>(List.of(binary));
      if ("root".equals(System.getProperty("user.name"))) {
        command.addAll(List.of("-u", "postgres"));
      }
      command.add(ini.toString());
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("output.log").toFile()))
              .start();
      PgBouncer bouncer = new PgBouncer(dir, port, database, user, process);
      bouncer.awaitListening(binary);
      return bouncer;
    } catch (IOException e) {
      throw new UncheckedIOException("Could not run " + binary + ": " + e.getMessage(), e);
    }
  }

  private static String parameter(String query, String name, String otherwise) {
    if (query != null) {
      for (String pair : query.split("&")) {
        if (pair.startsWith(name + "=")) {
          return pair.substring(name.length() + 1);
        }
      }
    }
    return otherwise;
  }

  private void awaitListening(String binary) throws IOException {
    if (!ChildProcesses.awaitListening(process, port, START_DEADLINE)) {
      String output = log();
      close();
      throw new IOException(
          "pgbouncer ("
              + binary
              + ") did not listen on port "
              + port
              + " within "
              + START_DEADLINE.toSeconds()
              + " s: "
              + output);
    }
  }

  /** JDBC URL of the database through PgBouncer. */
  public String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?user=" + user;
  }

  /**
   * A pool of {@code size} connections through PgBouncer, closed with it. Without server-side
   * prepared statements ({@code prepareThreshold=0}): in transaction mode a statement prepared in
   * one transaction's server session is unknown to the next one's.
   */
  public HikariDataSource pool(int size, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl() + "&prepareThreshold=0");
    config.setMaximumPoolSize(size);
    config.setPoolName(name);
    HikariDataSource pool = new HikariDataSource(config);
    pools.add(pool);
    return pool;
  }

  /** What PgBouncer logged so far (its log file and output), for a failing test's message. */
  public String log() {
    StringBuilder text = new StringBuilder();
    for (String name : List.of("output.log", "pgbouncer.log")) {
      Path file = dir.resolve(name);
      try {
        if (Files.exists(file)) {
          text.append(Files.readString(file));
        }
      } catch (IOException e) {
        text.append("(").append(name).append(" unreadable: ").append(e.getMessage()).append(")");
      }
    }
    return text.toString();
  }

  /** Stops PgBouncer (SIGTERM, then waits) and deletes its files. */
  @Override
  public void close() {
    pools.forEach(HikariDataSource::close);
    ChildProcesses.stop(process);
    Files2.deleteRecursively(dir);
  }

  @Override
  public String toString() {
    return "PgBouncer[" + jdbcUrl() + (process.isAlive() ? "" : ", stopped") + "]";
  }
}
