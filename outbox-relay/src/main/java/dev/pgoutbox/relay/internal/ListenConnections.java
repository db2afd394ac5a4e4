package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.ConnectionFactory;
import java.lang.reflect.Method;
import java.util.Properties;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Derives an unpooled {@code LISTEN} connection factory from the host's data source when the host
 * did not give one: HikariCP (read through its public getters, so Hikari stays optional) and
 * pgjdbc's own unpooled data sources.
 */
public final class ListenConnections {

  private ListenConnections() {}

  /** A factory for {@code dataSource}, or null when its kind is unknown. */
  public static @Nullable ConnectionFactory derive(DataSource dataSource, String applicationName) {
    if (dataSource instanceof org.postgresql.ds.common.BaseDataSource pg
        && !(dataSource instanceof javax.sql.ConnectionPoolDataSource)) {
      return pg::getConnection;
    }
    if (dataSource.getClass().getName().equals("com.zaxxer.hikari.HikariDataSource")) {
      try {
        String url = (String) call(dataSource, "getJdbcUrl");
        if (url == null) {
          return null;
        }
        Properties properties = new Properties();
        Object extra = call(dataSource, "getDataSourceProperties");
        if (extra instanceof Properties p) {
          properties.putAll(p);
        }
        Object user = call(dataSource, "getUsername");
        Object password = call(dataSource, "getPassword");
        if (user != null) {
          properties.setProperty("user", user.toString());
        }
        if (password != null) {
          properties.setProperty("password", password.toString());
        }
        properties.setProperty("ApplicationName", applicationName);
        return ConnectionFactory.of(url, properties);
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null;
      }
    }
    return null;
  }

  private static @Nullable Object call(Object target, String getter)
      throws ReflectiveOperationException {
    Method method = target.getClass().getMethod(getter);
    return method.invoke(target);
  }
}
