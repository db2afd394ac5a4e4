package dev.pgoutbox.tools.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.db.OutboxSchema;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench writer}: what the outbox costs a business transaction. An order and three items
 * alone; plus one outbox event (notify trigger off, then on); plus one plain INSERT of the same
 * payload into an unindexed table, the physical floor of writing anything more.
 */
@Command(
    name = "writer",
    mixinStandardHelpOptions = true,
    description =
        "Business transaction alone, + one outbox event (trigger off/on), + one unindexed INSERT"
            + " (the floor); tx/s per --clients, ratio_to_floor for the outbox with the trigger off.")
final class WriterCommand implements Callable<Integer> {

  private enum Variant {
    BUSINESS,
    FLOOR,
    OUTBOX,
    OUTBOX_NOTIFY,
    /** With a table relay publishing beside the writers (--with-relays). */
    TABLE_RELAY,
    /** With a WAL relay publishing beside the writers (--with-relays). */
    WAL_RELAY,
    /**
     * With only a reader of a slot beside the writers (--with-relays): the server's logical
     * decoding and WAL sender, without the WAL relay's publishing and completion.
     */
    WAL_DECODING_ONLY
  }

  @Mixin BenchOptions options;

  @Mixin TransportOption transport;

  @Option(
      names = "--clients",
      split = ",",
      description = "Concurrent clients, one result line each (default 1,4)")
  List<Integer> clients;

  @Option(
      names = "--seconds",
      description = "Measured seconds per variant and client count (default 12; --quick 2)")
  Integer seconds;

  @Option(
      names = "--rounds",
      defaultValue = "3",
      description = "The variants take turns this many times, so load drift hits all alike")
  int rounds;

  @Option(
      names = "--with-relays",
      description =
          "Also run the outbox transaction (trigger on) while a table relay, then a WAL relay,"
              + " publishes what the writers write (no-op publisher; needs wal_level=logical: the"
              + " embedded PostgreSQL is started with it): table_relay_tx_per_s,"
              + " wal_relay_tx_per_s, ratio_wal_relay_to_table_relay; and while only a reader"
              + " streams a slot (decoding alone): wal_decoding_only_tx_per_s,"
              + " ratio_wal_decoding_only_to_table_relay")
  boolean withRelays;

  @Override
  public Integer call() throws Exception {
    List<Integer> clientCounts = clients != null ? clients : List.of(1, 4);
    int secondsPerVariant = seconds != null ? seconds : options.quick ? 2 : 12;
    List<Variant> variants =
        withRelays
            ? List.of(Variant.values())
            : List.of(Variant.BUSINESS, Variant.FLOOR, Variant.OUTBOX, Variant.OUTBOX_NOTIFY);
    boolean allVerified = true;
    try (BenchDatabase db = BenchDatabase.open(options, withRelays)) {
      db.resetSchema();
      createBusinessTables(db);
      if (transport.messages() && withRelays) {
        throw new IllegalArgumentException(
            "--transport messages measures the writer alone: --with-relays reads rows");
      }
      transport.prepare(db);
      Outbox outbox = Outbox.builder().schema(db.schema()).transport(transport.value()).build();
      for (int clientCount : clientCounts) {
        Map<Variant, Long> committed = new EnumMap<>(Variant.class);
        Map<Variant, Double> elapsed = new EnumMap<>(Variant.class);
        long sliceMillis = Math.max(200, secondsPerVariant * 1000L / rounds);
        Map<Variant, Long> relayed = new EnumMap<>(Variant.class);
        for (int round = 0; round < rounds; round++) {
          for (Variant variant : variants) {
            OutboxSchema.setNotifyTrigger(
                db.pool(1), db.schema(), variant != Variant.OUTBOX && variant != Variant.FLOOR);
            BesideRelay relay = startRelayFor(db, variant);
            long start = System.nanoTime();
            long count = run(db, outbox, variant, clientCount, sliceMillis);
            elapsed.merge(variant, (System.nanoTime() - start) / 1e9, Double::sum);
            committed.merge(variant, count, Long::sum);
            if (relay != null) {
              relay.stop();
              relayed.merge(variant, relay.published(), Long::sum);
            }
          }
        }
        long outboxRows = db.queryLong("SELECT count(*) FROM outbox_events");
        long outboxCommits =
            committed.get(Variant.OUTBOX)
                + committed.get(Variant.OUTBOX_NOTIFY)
                + committed.getOrDefault(Variant.TABLE_RELAY, 0L)
                + committed.getOrDefault(Variant.WAL_RELAY, 0L)
                + committed.getOrDefault(Variant.WAL_DECODING_ONLY, 0L);
        Result result =
            new Result("writer").put("clients", clientCount).put("transport", transport.label());
        Map<Variant, Double> rate = new EnumMap<>(Variant.class);
        for (Variant variant : variants) {
          rate.put(variant, committed.get(variant) / elapsed.get(variant));
        }
        result
            .put("seconds", secondsPerVariant)
            .put("business_tx_per_s", Result.round(rate.get(Variant.BUSINESS), 0))
            .put("floor_tx_per_s", Result.round(rate.get(Variant.FLOOR), 0))
            .put("outbox_tx_per_s", Result.round(rate.get(Variant.OUTBOX), 0))
            .put("outbox_notify_tx_per_s", Result.round(rate.get(Variant.OUTBOX_NOTIFY), 0))
            .put("events", outboxCommits)
            .put("events_per_s", Result.round(rate.get(Variant.OUTBOX), 0))
            .put(
                "ratio_to_floor",
                Result.round(rate.get(Variant.OUTBOX) / rate.get(Variant.FLOOR), 3))
            .put(
                "ratio_notify_to_floor",
                Result.round(rate.get(Variant.OUTBOX_NOTIFY) / rate.get(Variant.FLOOR), 3));
        // Committed outbox transactions against rows in the table; nothing is delivered, so no
        // order is checked. Messages leave no row: what is checked is that none was written
        // (their delivery is checked by drain, latency and chaos).
        if (transport.messages()) {
          result.put("outbox_rows", outboxRows);
        } else {
          result
              .put("lost", outboxCommits - outboxRows)
              .put("duplicates", Math.max(0, outboxRows - outboxCommits));
        }
        if (withRelays) {
          result
              .put("table_relay_tx_per_s", Result.round(rate.get(Variant.TABLE_RELAY), 0))
              .put("wal_relay_tx_per_s", Result.round(rate.get(Variant.WAL_RELAY), 0))
              .put(
                  "ratio_wal_relay_to_table_relay",
                  Result.round(rate.get(Variant.WAL_RELAY) / rate.get(Variant.TABLE_RELAY), 3))
              .put(
                  "wal_decoding_only_tx_per_s",
                  Result.round(rate.get(Variant.WAL_DECODING_ONLY), 0))
              .put(
                  "ratio_wal_decoding_only_to_table_relay",
                  Result.round(
                      rate.get(Variant.WAL_DECODING_ONLY) / rate.get(Variant.TABLE_RELAY), 3))
              // What each relay published while the writers ran: proof it was working.
              .put("table_relay_published", relayed.get(Variant.TABLE_RELAY))
              .put("wal_relay_published", relayed.get(Variant.WAL_RELAY))
              .put("wal_decoding_only_streamed", relayed.get(Variant.WAL_DECODING_ONLY));
        }
        db.describe(result);
        result.print(System.out, options.json);
        allVerified &= result.verified() && (!transport.messages() || outboxRows == 0);
        db.execute("TRUNCATE outbox_events, bench_order_items, bench_orders, bench_floor");
      }
      OutboxSchema.setNotifyTrigger(db.pool(1), db.schema(), true);
    }
    return allVerified ? 0 : 1;
  }

  /**
   * For the relay variants: marks what earlier variants left pending as processed (so the relay
   * publishes only what this variant writes), then starts the relay; null for the others.
   */
  private static @Nullable BesideRelay startRelayFor(BenchDatabase db, Variant variant)
      throws Exception {
    BesideRelay.@Nullable Kind kind =
        switch (variant) {
          case TABLE_RELAY -> BesideRelay.Kind.TABLE;
          case WAL_RELAY -> BesideRelay.Kind.WAL;
          case WAL_DECODING_ONLY -> BesideRelay.Kind.DECODING_ONLY;
          default -> null;
        };
    if (kind == null) {
      return null;
    }
    db.execute("UPDATE outbox_events SET processed_at = now() WHERE processed_at IS NULL");
    return BesideRelay.start(db, kind);
  }

  private static void createBusinessTables(BenchDatabase db) throws Exception {
    db.execute(
        "CREATE TABLE bench_orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            + " customer_id text NOT NULL, total numeric(12,2) NOT NULL,"
            + " created_at timestamptz NOT NULL DEFAULT now())");
    db.execute(
        "CREATE TABLE bench_order_items (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
            + " order_id bigint NOT NULL REFERENCES bench_orders (id), sku text NOT NULL,"
            + " quantity int NOT NULL, unit_price numeric(12,2) NOT NULL)");
    // The floor: the same payload into a table with no index at all.
    db.execute(
        "CREATE TABLE bench_floor (aggregate_type text, aggregate_id text, event_type text,"
            + " payload jsonb, headers jsonb)");
  }

  /** Runs {@code clients} clients for {@code millis}; returns committed transactions. */
  private static long run(
      BenchDatabase db, Outbox outbox, Variant variant, int clients, long millis) throws Exception {
    ExecutorService threads = Executors.newFixedThreadPool(clients);
    AtomicBoolean stop = new AtomicBoolean();
    List<Future<Long>> futures = new ArrayList<>();
    for (int c = 0; c < clients; c++) {
      int client = c;
      futures.add(threads.submit(() -> client(db, outbox, variant, client, stop)));
    }
    TimeUnit.MILLISECONDS.sleep(millis);
    stop.set(true);
    long total = 0;
    for (Future<Long> future : futures) {
      total += future.get();
    }
    threads.shutdownNow();
    return total;
  }

  private static long client(
      BenchDatabase db, Outbox outbox, Variant variant, int client, AtomicBoolean stop)
      throws Exception {
    long done = 0;
    // Made once, as the Outbox makes its own: building a mapper per transaction (module setup,
    // cold introspection caches) made the floor slower than an insert of the payload costs.
    ObjectMapper mapper = Outbox.defaultObjectMapper();
    try (Connection connection = db.connect();
        PreparedStatement order =
            connection.prepareStatement(
                "INSERT INTO bench_orders (customer_id, total) VALUES (?, ?) RETURNING id");
        PreparedStatement item =
            connection.prepareStatement(
                "INSERT INTO bench_order_items (order_id, sku, quantity, unit_price)"
                    + " VALUES (?, ?, ?, ?)");
        PreparedStatement floor =
            connection.prepareStatement(
                "INSERT INTO bench_floor (aggregate_type, aggregate_id, event_type, payload,"
                    + " headers) VALUES (?, ?, ?, ?::jsonb, '{}'::jsonb)")) {
      connection.setAutoCommit(false);
      while (!stop.get()) {
        String customer = "customer-" + client + "-" + done;
        order.setString(1, customer);
        order.setBigDecimal(2, new BigDecimal("59.97"));
        long orderId;
        try (ResultSet rs = order.executeQuery()) {
          rs.next();
          orderId = rs.getLong(1);
        }
        for (int i = 0; i < 3; i++) {
          item.setLong(1, orderId);
          item.setString(2, "SKU-" + i);
          item.setInt(3, 1);
          item.setBigDecimal(4, new BigDecimal("19.99"));
          item.addBatch();
        }
        item.executeBatch();
        Map<String, Object> payload =
            Map.of("orderId", orderId, "customerId", customer, "total", "59.97", "items", 3);
        switch (variant) {
          case OUTBOX, OUTBOX_NOTIFY, TABLE_RELAY, WAL_RELAY, WAL_DECODING_ONLY ->
              outbox.append(
                  connection,
                  OutboxEvent.of("order", Long.toString(orderId), "order.created", payload));
          case FLOOR -> {
            floor.setString(1, "order");
            floor.setString(2, Long.toString(orderId));
            floor.setString(3, "order.created");
            floor.setString(4, mapper.writeValueAsString(payload));
            floor.executeUpdate();
          }
          case BUSINESS -> {
            // the business transaction alone
          }
        }
        connection.commit();
        done++;
      }
    }
    return done;
  }
}
