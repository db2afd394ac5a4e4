package dev.pgoutbox.core;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.internal.Ids;
import dev.pgoutbox.db.jooq.tables.records.OutboxEventsRecord;
import dev.pgoutbox.testing.TestSchema;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;
import org.jooq.DSLContext;
import org.jooq.ExecuteContext;
import org.jooq.ExecuteListener;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Events of one transaction keep their order; ids, headers and statements are as documented. */
class OutboxOrderingIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final List<String> statements = new CopyOnWriteArrayList<>();
  private static DSLContext host;
  private static Outbox outbox;

  @BeforeAll
  static void setUp() {
    ExecuteListener recorder =
        new ExecuteListener() {
          @Override
          public void executeStart(ExecuteContext ctx) {
            statements.add(ctx.sql());
          }
        };
    host = DSL.using(db.dataSource(), SQLDialect.POSTGRES).configuration().derive(recorder).dsl();
    outbox = Outbox.builder().schema(db.schema()).build();
  }

  @BeforeEach
  void empty() {
    db.execute("TRUNCATE outbox_events");
    statements.clear();
  }

  private static OutboxEvent event(int seq) {
    return OutboxEvent.of("order", "42", "order.step", Map.of("seq", seq));
  }

  @Test
  void appendAllWritesTheListInOrderWithOneInsert() {
    List<OutboxEvent> events = IntStream.rangeClosed(1, 20).mapToObj(i -> event(i)).toList();

    List<UUID> ids = host.transactionResult(tx -> outbox.appendAll(tx.dsl(), events));

    assertThat(statements).filteredOn(sql -> sql.startsWith("insert")).hasSize(1);
    List<OutboxEventsRecord> stored = Stored.events(db);
    assertThat(stored).extracting(OutboxEventsRecord::getId).containsExactlyElementsOf(ids);
    assertThat(stored)
        .extracting(row -> JSON.readTree(row.getPayload().data()).get("seq").asInt())
        .containsExactlyElementsOf(IntStream.rangeClosed(1, 20).boxed().toList());
    assertThat(stored)
        .extracting(OutboxEventsRecord::getCreatedAt)
        .containsOnly(stored.get(0).getCreatedAt());
  }

  @Test
  void severalAppendsInOneTransactionKeepTheirCallOrder() {
    List<UUID> ids =
        host.transactionResult(
            tx -> {
              List<UUID> written = new ArrayList<>();
              for (int i = 1; i <= 5; i++) {
                written.add(outbox.append(tx.dsl(), event(i)));
              }
              written.addAll(outbox.appendAll(tx.dsl(), List.of(event(6), event(7))));
              written.add(outbox.append(tx.dsl(), event(8)));
              return written;
            });

    List<OutboxEventsRecord> stored = Stored.events(db);
    assertThat(stored).extracting(OutboxEventsRecord::getId).containsExactlyElementsOf(ids);
    assertThat(stored)
        .extracting(row -> JSON.readTree(row.getPayload().data()).get("seq").asInt())
        .containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
  }

  @Test
  void defaultIdsAreTimeOrderedUuidV7InPositionOrder() {
    long before = System.currentTimeMillis();
    List<UUID> ids =
        host.transactionResult(
            tx ->
                outbox.appendAll(
                    tx.dsl(), IntStream.range(0, 50).mapToObj(i -> event(i)).toList()));
    long after = System.currentTimeMillis();

    assertThat(ids).allSatisfy(id -> assertThat(id.version()).isEqualTo(7));
    assertThat(ids).allSatisfy(id -> assertThat(id.variant()).isEqualTo(2));
    assertThat(ids).isSorted().doesNotHaveDuplicates();
    assertThat(ids).allSatisfy(id -> assertThat(Ids.epochMillis(id)).isBetween(before, after));
  }

  @Test
  void explicitIdIsStoredAsGiven() {
    UUID explicit = UUID.fromString("0190f2a0-0000-7000-8000-000000000001");
    UUID returned =
        host.transactionResult(tx -> outbox.append(tx.dsl(), event(1).withId(explicit)));

    assertThat(returned).isEqualTo(explicit);
    assertThat(Stored.events(db)).extracting(OutboxEventsRecord::getId).containsExactly(explicit);
  }

  @Test
  void headersHookIsAddedToEveryEventAndTheEventsOwnHeadersWin() throws Exception {
    Outbox traced =
        Outbox.builder()
            .schema(db.schema())
            .headers(() -> Map.of("traceparent", "00-trace-span-01", "tenant", "acme"))
            .build();

    host.transaction(
        tx ->
            traced.appendAll(tx.dsl(), List.of(event(1), event(2).withHeader("tenant", "globex"))));

    List<OutboxEventsRecord> stored = Stored.events(db);
    assertThat(headers(stored.get(0)))
        .isEqualTo(Map.of("traceparent", "00-trace-span-01", "tenant", "acme"));
    assertThat(headers(stored.get(1)))
        .isEqualTo(Map.of("traceparent", "00-trace-span-01", "tenant", "globex"));
  }

  private static Map<String, String> headers(OutboxEventsRecord row) throws Exception {
    return JSON.readValue(row.getHeaders().data(), new TypeReference<Map<String, String>>() {});
  }

  @Test
  void headersHookReturningNullAddsNothing() {
    Outbox hooked = Outbox.builder().schema(db.schema()).headers(() -> null).build();

    host.transaction(tx -> hooked.append(tx.dsl(), event(1).withHeader("k", "v")));

    assertThat(Stored.events(db).get(0).getHeaders().data()).isEqualTo("{\"k\": \"v\"}");
  }

  @Test
  void appendAllOfAnEmptyListSendsNothing() {
    List<UUID> ids = host.transactionResult(tx -> outbox.appendAll(tx.dsl(), List.of()));

    assertThat(ids).isEmpty();
    assertThat(statements).noneMatch(sql -> sql.startsWith("insert"));
  }

  @Test
  void appendAllBeyondOneStatementSplitsAndKeepsTheOrder() {
    int count = Outbox.MAX_ROWS_PER_STATEMENT + 7;
    List<OutboxEvent> events = IntStream.range(0, count).mapToObj(i -> event(i)).toList();

    List<UUID> ids = host.transactionResult(tx -> outbox.appendAll(tx.dsl(), events));

    assertThat(statements).filteredOn(sql -> sql.startsWith("insert")).hasSize(2);
    assertThat(Stored.events(db))
        .extracting(OutboxEventsRecord::getId)
        .containsExactlyElementsOf(ids);
  }
}
