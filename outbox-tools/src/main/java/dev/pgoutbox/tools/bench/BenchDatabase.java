package dev.pgoutbox.tools.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.testing.EmbeddedPostgresServer;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/** The PostgreSQL a scenario measures: the given URL, or an embedded server for the run. */
final class BenchDatabase implements AutoCloseable {

  static final String URL_VARIABLE = "PGOUTBOX_BENCH_JDBC_URL";

  private final String jdbcUrl;
  private final String schema;
  private final @Nullable EmbeddedPostgresServer embedded;
  private final List<HikariDataSource> pools = new ArrayList<>();
  private boolean checkpointRefused;

  private BenchDatabase(String jdbcUrl, String schema, @Nullable EmbeddedPostgresServer embedded) {
    this.jdbcUrl = jdbcUrl;
    this.schema = schema;
    this.embedded = embedded;
  }

  static BenchDatabase open(BenchOptions options) {
    return open(options, false);
  }

  /**
   * The database; with {@code logicalDecoding}, an embedded one runs with {@code wal_level=logical}
   * (a given URL must point at such a server already: the WAL runs check it).
   */
  static BenchDatabase open(BenchOptions options, boolean logicalDecoding) {
    OutboxSchema.requireValidName(options.schema);
    String url = options.jdbcUrl;
    if (url == null || url.isBlank()) {
      url = System.getenv(URL_VARIABLE);
    }
    if (url != null && !url.isBlank()) {
      if (!options.pgSettings.isEmpty()) {
        throw new IllegalArgumentException(
            "--pg-setting applies to the embedded PostgreSQL only; set "
                + options.pgSettings.keySet()
                + " on the server of --jdbc-url (or $"
                + URL_VARIABLE
                + ") yourself");
      }
      BenchDatabase given = new BenchDatabase(url, options.schema, null);
      if (logicalDecoding) {
        given.requireLogicalDecoding();
      }
      return given;
    }
    System.err.println(
        "bench: no --jdbc-url or $" + URL_VARIABLE + "; starting an embedded PostgreSQL");
    EmbeddedPostgresServer embedded =
        EmbeddedPostgresServer.start(embeddedSettings(logicalDecoding, options.pgSettings));
    return new BenchDatabase(embedded.jdbcUrl(), options.schema, embedded);
  }

  /**
   * The embedded server's settings for a bench: {@code fsync} on, as on any production database
   * (the embedded library starts PostgreSQL with {@code -F}, fsync off, which suits tests but
   * flatters every commit), {@code wal_level=logical} for the WAL runs, then {@code --pg-setting}
   * values, which win ({@code --pg-setting fsync=off} to compare).
   */
  static Map<String, String> embeddedSettings(
      boolean logicalDecoding, Map<String, String> pgSettings) {
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put("fsync", "on");
    if (logicalDecoding) {
      settings.putAll(EmbeddedPostgresServer.LOGICAL_DECODING);
    }
    settings.putAll(pgSettings);
    return settings;
  }

  /**
   * Fails, naming {@code wal_level} and how to set it, unless the server can decode its WAL: the
   * WAL runs need a logical replication slot.
   */
  private void requireLogicalDecoding() {
    String level;
    try {
      level = show("wal_level");
    } catch (SQLException e) {
      throw new IllegalStateException(
          "--source wal: could not read wal_level from the given PostgreSQL: " + e.getMessage(), e);
    }
    if (!"logical".equals(level)) {
      throw new IllegalStateException(
          "--source wal needs a PostgreSQL with wal_level = logical, the given one runs with"
              + " wal_level = "
              + level
              + ": run ALTER SYSTEM SET wal_level = logical there and restart it, or leave out"
              + " --jdbc-url (and $"
              + URL_VARIABLE
              + ") to measure on an embedded PostgreSQL started with it");
    }
  }

  String schema() {
    return schema;
  }

  /** Drops and recreates the schema with the pgoutbox migrations. */
  void resetSchema() throws SQLException {
    execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    try (HikariDataSource pool = newPool(3)) { // Flyway holds a second connection for its lock
      OutboxSchema.migrate(pool, schema);
    }
  }

  /** A pool on the schema; closed with this database. */
  HikariDataSource pool(int size) {
    HikariDataSource pool = newPool(size);
    pools.add(pool);
    return pool;
  }

  private HikariDataSource newPool(int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setConnectionInitSql("SET search_path TO " + schema);
    config.addDataSourceProperty("reWriteBatchedInserts", "true");
    return new HikariDataSource(config);
  }

  Connection connect() throws SQLException {
    Connection connection = DriverManager.getConnection(jdbcUrl);
    try (Statement statement = connection.createStatement()) {
      statement.execute("SET search_path TO " + schema);
    }
    return connection;
  }

  void execute(String sql) throws SQLException {
    try (Connection connection = connect();
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
    }
  }

  long queryLong(String sql) throws SQLException {
    try (Connection connection = connect();
        Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** Rows still pending (not processed, not deleted). */
  long pending() throws SQLException {
    return queryLong("SELECT count(*) FROM outbox_events WHERE processed_at IS NULL");
  }

  /** The value of a server setting ({@code SHOW name}). */
  String show(String setting) throws SQLException {
    try (Connection connection = connect();
        Statement statement = connection.createStatement();
        ResultSet rs = statement.executeQuery("SHOW " + setting)) {
      rs.next();
      return rs.getString(1);
    }
  }

  /**
   * Writes {@code events} pending events round-robin over {@code aggregates} aggregates (each
   * aggregate's seq rises with position), as one INSERT ... SELECT, then ANALYZE and a {@link
   * #checkpoint}.
   *
   * @return the highest seq per aggregate
   */
  Map<String, Integer> preload(int events, int aggregates) throws SQLException {
    return preload(events, aggregates, false);
  }

  /**
   * As {@link #preload(int, int)}; with {@code traceparent}, each event also carries a W3C {@code
   * traceparent} header of its own, as the writer stores inside a traced request.
   */
  Map<String, Integer> preload(int events, int aggregates, boolean traceparent)
      throws SQLException {
    execute(
        "INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, headers)"
            + " SELECT 'order', 'agg-' || (i % "
            + aggregates
            + "), 'order.step', jsonb_build_object('aggregate', 'agg-' || (i % "
            + aggregates
            + "), 'seq', i / "
            + aggregates
            + " + 1), "
            + (traceparent
                ? "jsonb_build_object('traceparent', '00-' || md5(i::text) || '-'"
                    + " || substr(md5((i + 1)::text), 1, 16) || '-01')"
                : "'{}'::jsonb")
            + " FROM generate_series(0, "
            + (events - 1)
            + ") AS i");
    execute("ANALYZE outbox_events");
    checkpoint();
    Map<String, Integer> written = new HashMap<>();
    for (int i = 0; i < Math.min(events, aggregates); i++) {
      written.put("agg-" + i, events / aggregates + (i < events % aggregates ? 1 : 0));
    }
    return written;
  }

  /**
   * Runs a {@code CHECKPOINT}, so that every run on preloaded data starts from the same point: the
   * first change to each page after a checkpoint writes the whole page to the WAL, and without it
   * only the runs that happened to cross one of the server's own checkpoints (every 5 minutes, or
   * per WAL volume) paid for that, which moved figures taken a minute apart by a third. A role that
   * may not ({@code pg_checkpoint} or superuser) is told once, and the runs go on without.
   */
  void checkpoint() throws SQLException {
    if (checkpointRefused) {
      return;
    }
    try {
      execute("CHECKPOINT");
    } catch (SQLException e) {
      if (!"42501".equals(e.getSQLState())) {
        throw e;
      }
      checkpointRefused = true;
      System.err.println(
          "bench: CHECKPOINT refused ("
              + e.getMessage()
              + "); runs start without one, so some pay full-page writes and others not."
              + " Grant pg_checkpoint to compare runs on equal terms.");
    }
  }

  /**
   * Standard fields of every result: where and on what it ran, and whether autovacuum and fsync
   * were on (read from the server: a queue table measured without vacuum, or commits that never
   * reach the disk, are not a production database).
   */
  void describe(Result result) throws SQLException {
    result
        .put("pg_version", show("server_version"))
        .put("autovacuum", "on".equals(show("autovacuum")))
        .put("fsync", "on".equals(show("fsync")))
        .put("embedded_pg", embedded != null)
        .put("cores", Runtime.getRuntime().availableProcessors());
  }

  @Override
  public void close() {
    pools.forEach(HikariDataSource::close);
    if (embedded != null) {
      embedded.close();
    }
  }
}
