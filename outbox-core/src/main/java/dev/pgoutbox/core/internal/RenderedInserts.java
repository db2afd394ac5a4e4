package dev.pgoutbox.core.internal;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.jooq.DSLContext;
import org.jooq.JSONB;

/**
 * The writer's {@link EventInserts} statements for a JDBC connection, rendered once per shape (rows
 * and lock keys) and then run as plain prepared statements. Building and rendering the jOOQ query
 * cost the writer more CPU per event (tens of microseconds) than PostgreSQL spends on the insert;
 * the text depends only on the shape and the outbox's settings, so it is kept. Shapes beyond {@link
 * #MAX_CACHED} rows or keys are rendered each time (their rows dominate). Thread-safe.
 */
public final class RenderedInserts {

  /** Largest number of rows, and of lock keys, whose statement is kept. */
  static final int MAX_CACHED = 16;

  private static final UUID PLACEHOLDER_ID = new UUID(0, 0);

  private final DSLContext renderer;
  private final Map<Integer, String> byShape = new ConcurrentHashMap<>();

  /** Statements rendered by {@code renderer} (a context without a connection). */
  public RenderedInserts(DSLContext renderer) {
    this.renderer = renderer;
  }

  /**
   * Inserts {@code rows} on {@code connection}, taking the locks of {@code sortedKeys} first when
   * there are any (see {@link EventInserts#holdingLocks}).
   *
   * @return the number of rows inserted
   */
  public int execute(Connection connection, List<OutboxEventsRecord> rows, List<String> sortedKeys)
      throws SQLException {
    List<String> binds = binds(rows, sortedKeys);
    try (PreparedStatement statement = connection.prepareStatement(sql(rows.size(), sortedKeys))) {
      for (int i = 0; i < binds.size(); i++) {
        statement.setString(i + 1, binds.get(i));
      }
      return statement.executeUpdate();
    }
  }

  /** The statement for rows and keys of these counts, with {@code ?} for every value. */
  String sql(int rowCount, List<String> sortedKeys) {
    int keyCount = sortedKeys.size();
    if (rowCount > MAX_CACHED || keyCount > MAX_CACHED) {
      return render(rowCount, keyCount);
    }
    return byShape.computeIfAbsent(
        rowCount * (MAX_CACHED + 1) + keyCount, shape -> render(rowCount, keyCount));
  }

  private String render(int rowCount, int keyCount) {
    List<OutboxEventsRecord> rows = new ArrayList<>(rowCount);
    for (int i = 0; i < rowCount; i++) {
      rows.add(
          new OutboxEventsRecord()
              .setId(PLACEHOLDER_ID)
              .setAggregateType("")
              .setAggregateId("")
              .setEventType("")
              .setPayload(JSONB.valueOf("{}"))
              .setHeaders(JSONB.valueOf("{}")));
    }
    List<String> keys = new ArrayList<>(keyCount);
    for (int i = 0; i < keyCount; i++) {
      keys.add("");
    }
    return renderer.render(
        keyCount == 0
            ? EventInserts.plain(renderer, rows)
            : EventInserts.holdingLocks(renderer, rows, keys));
  }

  /**
   * The values in the order the statement takes them: each row's id (as text), aggregate type,
   * aggregate id, event type, payload and headers, then the lock keys.
   */
  static List<String> binds(List<OutboxEventsRecord> rows, List<String> sortedKeys) {
    List<String> binds = new ArrayList<>(rows.size() * 6 + sortedKeys.size());
    for (OutboxEventsRecord row : rows) {
      binds.add(row.getId().toString());
      binds.add(row.getAggregateType());
      binds.add(row.getAggregateId());
      binds.add(row.getEventType());
      binds.add(row.getPayload().data());
      binds.add(row.getHeaders().data());
    }
    binds.addAll(sortedKeys);
    return binds;
  }
}
