package dev.pgoutbox.core.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.jooq.DSLContext;
import org.jooq.JSONB;
import org.jooq.Query;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The statement a plain JDBC writer runs is, text and values alike, the one jOOQ renders for the
 * same rows, for cached shapes and for those rendered each time.
 */
class RenderedInsertsTest {

  private final DSLContext renderer =
      DSL.using(SQLDialect.POSTGRES, Contexts.settings("shop_outbox"));
  private final RenderedInserts inserts = new RenderedInserts(renderer);

  @ParameterizedTest
  @CsvSource({"1,0", "1,1", "3,2", "16,16", "17,1", "2,17", "40,0"})
  void cachedStatementAndItsValuesAreWhatJooqRendersForTheSameRows(int rowCount, int keyCount) {
    List<OutboxEventsRecord> rows = new ArrayList<>();
    for (int i = 0; i < rowCount; i++) {
      rows.add(
          new OutboxEventsRecord()
              .setId(UUID.randomUUID())
              .setAggregateType("order")
              .setAggregateId("o-" + i)
              .setEventType("order.created")
              .setPayload(JSONB.valueOf("{\"n\": " + i + "}"))
              .setHeaders(JSONB.valueOf("{\"h\": \"" + i + "\"}")));
    }
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < keyCount; i++) {
      keys.add("order:o-" + i);
    }
    Query jooq =
        keyCount == 0
            ? EventInserts.plain(renderer, rows)
            : EventInserts.holdingLocks(renderer, rows, keys);

    // Twice: the second comes from the cache for small shapes.
    assertThat(inserts.sql(rowCount, keys)).isEqualTo(renderer.render(jooq));
    assertThat(inserts.sql(rowCount, keys)).isEqualTo(renderer.render(jooq));
    assertThat(inserts.sql(rowCount, keys)).contains("\"shop_outbox\".\"outbox_events\"");
    List<String> jooqValues =
        renderer.extractBindValues(jooq).stream().map(String::valueOf).toList();
    assertThat(RenderedInserts.binds(rows, keys)).isEqualTo(jooqValues);
  }
}
