package dev.pgoutbox.db;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A schema of its own for one db test class. pgoutbox-testing's {@code TestSchema} serves every
 * other module; it depends on this module (for {@link OutboxSchema#migrate}), so db's own tests
 * keep this small helper: the database from {@code PGOUTBOX_TEST_JDBC_URL} (or {@code
 * -Dpgoutbox.test.jdbcUrl}), else an embedded PostgreSQL unless {@code PGOUTBOX_TEST_NO_EMBEDDED}
 * is set, else a failure saying how to provide one. A database test never skips.
 */
final class DbTestSchema implements BeforeAllCallback, AfterAllCallback {

  private static String jdbcUrl;

  private final boolean migrate;
  private String schema = "";

  private DbTestSchema(boolean migrate) {
    this.migrate = migrate;
  }

  /** A schema with the pgoutbox tables in it. */
  static DbTestSchema migrated() {
    return new DbTestSchema(true);
  }

  /** An empty schema, for tests that run the migrations themselves. */
  static DbTestSchema empty() {
    return new DbTestSchema(false);
  }

  @Override
  public void beforeAll(ExtensionContext context) throws SQLException {
    String name = context.getRequiredTestClass().getSimpleName().toLowerCase(Locale.ROOT);
    schema = "t_" + name + "_" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    execute("CREATE SCHEMA " + schema);
    if (migrate) {
      OutboxSchema.migrate(dataSource(), schema);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
  }

  String schema() {
    return schema;
  }

  /** Unpooled connections with this schema first on their {@code search_path}. */
  DataSource dataSource() {
    PGSimpleDataSource dataSource = new PGSimpleDataSource();
    dataSource.setURL(url() + (url().contains("?") ? "&" : "?") + "currentSchema=" + schema);
    return dataSource;
  }

  Connection connect() throws SQLException {
    return dataSource().getConnection();
  }

  DSLContext dsl() {
    return DSL.using(dataSource(), SQLDialect.POSTGRES, OutboxSchema.jooqSettings(schema));
  }

  void execute(String sql) {
    try (Connection connection = DriverManager.getConnection(url());
        Statement statement = connection.createStatement()) {
      statement.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException(sql + ": " + e.getMessage(), e);
    }
  }

  private static synchronized String url() {
    if (jdbcUrl == null) {
      String url = System.getenv("PGOUTBOX_TEST_JDBC_URL");
      if (url == null || url.isBlank()) {
        url = System.getProperty("pgoutbox.test.jdbcUrl");
      }
      if ((url == null || url.isBlank()) && System.getenv("PGOUTBOX_TEST_NO_EMBEDDED") == null) {
        try {
          EmbeddedPostgres embedded = EmbeddedPostgres.builder().start();
          url = embedded.getJdbcUrl("postgres", "postgres");
        } catch (IOException e) {
          throw new IllegalStateException("embedded PostgreSQL failed: " + e, e);
        }
      }
      if (url == null || url.isBlank()) {
        throw new IllegalStateException(
            "No PostgreSQL for the db tests: set PGOUTBOX_TEST_JDBC_URL=jdbc:postgresql://host:5432"
                + "/db?user=... or unset PGOUTBOX_TEST_NO_EMBEDDED to use an embedded PostgreSQL");
      }
      jdbcUrl = url;
    }
    return jdbcUrl;
  }
}
