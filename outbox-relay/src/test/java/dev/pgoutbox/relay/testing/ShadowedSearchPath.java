package dev.pgoutbox.relay.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.testing.TestSchema;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;

/**
 * A hostile role's schema of planted look-alikes ({@code plant-shadows.sql}: overloads of catalog
 * functions and operators that record each call in {@code hits}), put first on the search path of
 * every session of a pool. What a test runs through {@link #pool()} must call none of them.
 */
public final class ShadowedSearchPath implements AutoCloseable {

  private final TestSchema db;
  private final String role;
  private final String shadow;
  private final HikariDataSource pool;

  private ShadowedSearchPath(TestSchema db, String poolName, int poolSize) throws IOException {
    this.db = db;
    this.role = db.schema() + "_hostile";
    this.shadow = db.schema() + "_shadow";
    db.execute("CREATE ROLE " + role + " NOLOGIN");
    db.execute("CREATE SCHEMA " + shadow + " AUTHORIZATION " + role);
    String plant;
    try (InputStream in =
        ShadowedSearchPath.class.getResourceAsStream("/dev/pgoutbox/relay/plant-shadows.sql")) {
      Objects.requireNonNull(in, "plant-shadows.sql of the relay's test-jar");
      plant = new String(in.readAllBytes(), StandardCharsets.UTF_8).replace("__SHADOW__", shadow);
    }
    db.execute("SET ROLE " + role + ";\n" + plant + "\nRESET ROLE");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(db.jdbcUrl());
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(0);
    config.setPoolName(poolName);
    config.setConnectionInitSql("SET search_path = " + shadow + ", pg_catalog, public");
    this.pool = new HikariDataSource(config);
  }

  /** Plants the shadows beside {@code db}'s schema and opens a pool of sessions that see them. */
  public static ShadowedSearchPath plant(TestSchema db, String poolName, int poolSize)
      throws IOException {
    return new ShadowedSearchPath(db, poolName, poolSize);
  }

  /** The schema of planted objects, first on the pool's search path. */
  public String shadow() {
    return shadow;
  }

  /** Sessions whose search path starts with {@link #shadow()}. */
  public HikariDataSource pool() {
    return pool;
  }

  /** Forgets the calls recorded so far. */
  public void clearHits() {
    db.execute("TRUNCATE " + shadow + ".hits");
  }

  /** Each planted function or operator that ran, with the query that ran it. */
  public List<String> hits() {
    return db.dsl()
        .resultQuery("select sig || ' in: ' || query from " + shadow + ".hits")
        .fetch(0, String.class);
  }

  /** Closes the pool, drops the schema and the role. */
  @Override
  public void close() {
    pool.close();
    db.execute("DROP SCHEMA IF EXISTS " + shadow + " CASCADE");
    db.execute("DROP ROLE IF EXISTS " + role);
  }
}
