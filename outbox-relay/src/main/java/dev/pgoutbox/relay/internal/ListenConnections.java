package dev.pgoutbox.relay.internal;

import dev.pgoutbox.relay.ListenConnectionFactory;
import java.lang.reflect.Method;
import java.util.Properties;
import javax.sql.ConnectionPoolDataSource;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.ds.common.BaseDataSource;

/**
 * Derives an unpooled {@code LISTEN} connection factory from the host's data source when the host
 * did not give one. Knows pgjdbc's own unpooled data sources and HikariCP in its three usual setups
 * ({@code setJdbcUrl}, {@code setDataSourceClassName} with data source properties, {@code
 * setDataSource} around a pgjdbc data source). Hikari is read through its public getters, so it
 * stays an optional dependency.
 */
public final class ListenConnections {

  private static final String HIKARI = "com.zaxxer.hikari.HikariDataSource";
  private static final String HIKARI_PROPERTY_ELF = "com.zaxxer.hikari.util.PropertyElf";

  private ListenConnections() {}

  /** A factory for {@code dataSource}, or null when its kind is unknown. */
  public static @Nullable ListenConnectionFactory derive(DataSource dataSource) {
    if (isUnpooledPgjdbc(dataSource)) {
      return withCredentials((BaseDataSource) dataSource, null, null);
    }
    if (!dataSource.getClass().getName().equals(HIKARI)) {
      return null;
    }
    try {
      String user = (String) call(dataSource, "getUsername");
      String password = (String) call(dataSource, "getPassword");
      String url = (String) call(dataSource, "getJdbcUrl");
      if (url != null) {
        return fromUrl(
            url, (Properties) call(dataSource, "getDataSourceProperties"), user, password);
      }
      Object wrapped = call(dataSource, "getDataSource");
      if (wrapped instanceof DataSource inner && isUnpooledPgjdbc(inner)) {
        return withCredentials((BaseDataSource) inner, user, password);
      }
      String className = (String) call(dataSource, "getDataSourceClassName");
      if (wrapped == null && className != null) {
        Object created = Class.forName(className).getConstructor().newInstance();
        if (created instanceof DataSource inner && isUnpooledPgjdbc(inner)) {
          // Configured the way Hikari configures it, so the two connect to the same place.
          Class.forName(HIKARI_PROPERTY_ELF)
              .getMethod("setTargetFromProperties", Object.class, Properties.class)
              .invoke(null, created, call(dataSource, "getDataSourceProperties"));
          return withCredentials((BaseDataSource) inner, user, password);
        }
      }
      return null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  private static boolean isUnpooledPgjdbc(DataSource dataSource) {
    return dataSource instanceof BaseDataSource
        && !(dataSource instanceof ConnectionPoolDataSource);
  }

  private static ListenConnectionFactory fromUrl(
      String url, @Nullable Properties extra, @Nullable String user, @Nullable String password) {
    Properties properties = new Properties();
    if (extra != null) {
      properties.putAll(extra);
    }
    if (user != null) {
      properties.setProperty("user", user);
    }
    if (password != null) {
      properties.setProperty("password", password);
    }
    return ListenConnectionFactory.of(url, properties);
  }

  /**
   * Connections to where {@code dataSource} connects, with all its settings (its URL names them),
   * opened through {@link ListenConnectionFactory#of} for its LISTEN settings. Hikari's username
   * and password win over the data source's, as they do in Hikari's pool.
   */
  private static ListenConnectionFactory withCredentials(
      BaseDataSource dataSource, @Nullable String user, @Nullable String password) {
    return user == null
        ? fromUrl(dataSource.getUrl(), null, dataSource.getUser(), dataSource.getPassword())
        : fromUrl(dataSource.getUrl(), null, user, password);
  }

  private static @Nullable Object call(Object target, String getter)
      throws ReflectiveOperationException {
    Method method = target.getClass().getMethod(getter);
    return method.invoke(target);
  }
}
