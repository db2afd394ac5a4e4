package dev.pgoutbox.relay.testing;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.List;

/**
 * The three roles of {@code grants.sql} ({@link OutboxRoles#grant}) for a test's schema: a writer,
 * a relay and a consumer that log in with a password and hold nothing else, and pools that log in
 * as them. Role names are cluster-wide, so they are derived from the run's unique schema name.
 */
public final class LeastPrivilegeRoles implements AutoCloseable {

  private final TestSchema db;
  private final String password;
  private final String writer;
  private final String relay;
  private final String consumer;
  private final List<HikariDataSource> pools = new ArrayList<>();

  private LeastPrivilegeRoles(TestSchema db, String password) {
    this.db = db;
    this.password = password;
    this.writer = db.schema() + "_writer";
    this.relay = db.schema() + "_relay";
    this.consumer = db.schema() + "_consumer";
    for (String role : List.of(writer, relay, consumer)) {
      db.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'");
    }
    OutboxRoles.grant(db.dataSource(), db.schema(), writer, relay, consumer);
  }

  /** Creates the roles and grants them what {@code grants.sql} grants on {@code db}'s schema. */
  public static LeastPrivilegeRoles grant(TestSchema db, String password) {
    return new LeastPrivilegeRoles(db, password);
  }

  /** The writer role's name. */
  public String writer() {
    return writer;
  }

  /** The relay role's name. */
  public String relay() {
    return relay;
  }

  /** The consumer role's name. */
  public String consumer() {
    return consumer;
  }

  /** The test database's URL, logging in as {@code role} instead of the test's superuser. */
  public String urlAs(String role) {
    String url =
        db.jdbcUrl()
            .replaceAll("([?&])(user|password)=[^&]*", "$1")
            .replaceAll("&&+", "&")
            .replace("?&", "?");
    return url + (url.endsWith("&") ? "" : "&") + "user=" + role + "&password=" + password;
  }

  /** A pool of at most {@code size} sessions logged in as {@code role}, closed with the roles. */
  public HikariDataSource poolAs(String role, int size, String name) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(urlAs(role));
    config.setMaximumPoolSize(size);
    config.setMinimumIdle(0);
    config.setPoolName(name);
    HikariDataSource pool = new HikariDataSource(config);
    pools.add(pool);
    return pool;
  }

  /** Closes the pools, then drops what the roles own and the roles. */
  @Override
  public void close() {
    pools.forEach(HikariDataSource::close);
    for (String role : List.of(writer, relay, consumer)) {
      db.execute("DROP OWNED BY " + role);
      db.execute("DROP ROLE " + role);
    }
  }
}
