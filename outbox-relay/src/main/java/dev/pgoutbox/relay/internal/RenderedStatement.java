package dev.pgoutbox.relay.internal;

import dev.pgoutbox.db.OutboxSchema;
import java.util.List;
import java.util.regex.Pattern;
import org.jooq.DSLContext;
import org.jooq.Query;
import org.jooq.SQLDialect;
import org.jooq.conf.ParamType;
import org.jooq.conf.Settings;
import org.jooq.impl.DSL;

/**
 * A statement built by jOOQ from the generated tables once, rendered to SQL with {@code ?}
 * placeholders for the outbox in one schema, and run through plain JDBC: the relay's hot statements
 * are not rendered again for every batch.
 *
 * @param sql the SQL text, with one {@code ?} per bind
 * @param binds the names of the binds, in placeholder order: bind {@code binds.get(i)} is JDBC
 *     parameter {@code i + 1}
 */
public record RenderedStatement(String sql, List<String> binds) {

  private static final Pattern NAMED_PLACEHOLDER = Pattern.compile("(?<![:\\w]):([A-Za-z]\\w*)");

  public RenderedStatement {
    binds = List.copyOf(binds);
  }

  /**
   * Renders {@code query}, whose binds are the named params {@code expectedBinds} in that order
   * (every other value inlined), for the tables in {@code schema}.
   *
   * @throws IllegalStateException if the rendered binds are not {@code expectedBinds}, in order:
   *     the documented bind order of a statement class is checked when it is built
   */
  public static RenderedStatement render(String schema, Query query, String... expectedBinds) {
    Settings settings =
        OutboxSchema.jooqSettings(schema)
            .withRenderFormatted(true)
            .withParamType(ParamType.INDEXED);
    DSLContext ctx = DSL.using(SQLDialect.POSTGRES, settings);
    String sql = ctx.render(query);
    // The same rendering with :name placeholders tells which bind each ? is.
    String named = ctx.renderNamedParams(query);
    List<String> binds = NAMED_PLACEHOLDER.matcher(named).results().map(m -> m.group(1)).toList();
    if (!binds.equals(List.of(expectedBinds))) {
      throw new IllegalStateException(
          "binds rendered as " + binds + ", expected " + List.of(expectedBinds) + ":\n" + named);
    }
    long placeholders = sql.chars().filter(c -> c == '?').count();
    if (placeholders != expectedBinds.length) {
      throw new IllegalStateException(
          placeholders + " placeholders for " + expectedBinds.length + " binds:\n" + sql);
    }
    return new RenderedStatement(sql, List.of(expectedBinds));
  }

  /** The JDBC parameter index of bind {@code name}. */
  public int index(String name) {
    int i = binds.indexOf(name);
    if (i < 0) {
      throw new IllegalArgumentException("no bind " + name + " in " + binds);
    }
    return i + 1;
  }
}
