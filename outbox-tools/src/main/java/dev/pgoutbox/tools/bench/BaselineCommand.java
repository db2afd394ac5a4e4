package dev.pgoutbox.tools.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code bench baseline}: the naive relay most write-ups show, on the same data as drain. By
 * default ticked: every poll tick, select one batch, "publish" it, and mark each row with its own
 * UPDATE. With {@code --continuous}: claim again at once while batches come back full, with {@code
 * --relays} connections (see {@link Drains#baseline}).
 */
@Command(
    name = "baseline",
    mixinStandardHelpOptions = true,
    description =
        "The naive relay (one UPDATE per row) on drain's data: one batch per --tick for"
            + " --max-seconds at most, or --continuous with --relays connections until drained.")
final class BaselineCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin DataOptions data;

  @Option(
      names = "--continuous",
      description =
          "Claim again at once while batches come back full (ORDER BY created_at, FOR UPDATE SKIP"
              + " LOCKED), until every event is marked")
  boolean continuous;

  @Option(
      names = "--batched-marks",
      description =
          "--continuous only: send a claim's per-row UPDATEs as one JDBC batch (one round trip)"
              + " instead of one round trip each")
  boolean batchedMarks;

  @Option(
      names = "--relays",
      defaultValue = "1",
      description =
          "Naive relays, one connection each; --continuous only (default ${DEFAULT-VALUE})")
  int relays;

  @Option(
      names = "--tick-ms",
      defaultValue = "100",
      description = "Poll interval in ms, ticked mode (default ${DEFAULT-VALUE})")
  long tickMillis;

  @Option(
      names = "--max-seconds",
      defaultValue = "30",
      description =
          "Ticked mode: stop after this long even if events remain (default ${DEFAULT-VALUE})")
  int maxSeconds;

  @Override
  public Integer call() throws Exception {
    if (relays != 1 && !continuous) {
      throw new IllegalArgumentException("--relays needs --continuous (the ticked relay is one)");
    }
    if (batchedMarks && !continuous) {
      throw new IllegalArgumentException("--batched-marks needs --continuous");
    }
    RelayOptions relayOptions = new RelayOptions();
    relayOptions.relays = relays;
    Drains.Setup setup = DrainCommand.setup(options, data, relayOptions);
    try (BenchDatabase db = BenchDatabase.open(options)) {
      Result result =
          continuous
              ? continuous(db, setup, batchedMarks)
              : ticked(db, setup, new Result("baseline"));
      db.describe(result);
      result.print(System.out, options.json);
      // The continuous naive relay orders by created_at alone on several connections: it promises
      // no order, so only a loss fails it.
      boolean verified = continuous ? result.longValue("lost") == 0 : result.verified();
      return verified ? 0 : 1;
    }
  }

  private static Result continuous(BenchDatabase db, Drains.Setup setup, boolean batchedMarks)
      throws Exception {
    Drains.Outcome outcome = Drains.baseline(db, setup, batchedMarks);
    Result result =
        new Result("baseline")
            .put("mode", "continuous")
            .put("batched_marks", batchedMarks)
            .put("events", setup.events())
            .put("aggregates", setup.aggregates())
            .put("relays", setup.relays())
            .put("batch", setup.batch())
            .put("seconds", Result.round(outcome.seconds(), 3))
            .put("events_per_s", Result.round(outcome.eventsPerSecond(), 0));
    Deliveries.Check check = outcome.check();
    if (check != null) {
      check.into(result);
    }
    return result.put("remaining", outcome.remaining());
  }

  private Result ticked(BenchDatabase db, Drains.Setup setup, Result result) throws Exception {
    db.resetSchema();
    Map<String, Integer> written = db.preload(setup.events(), setup.aggregates());
    Deliveries deliveries = new Deliveries();
    long drained = 0;
    long start = System.nanoTime();
    long deadline = start + TimeUnit.SECONDS.toNanos(maxSeconds);
    try (Connection connection = db.connect();
        PreparedStatement select =
            connection.prepareStatement(
                "SELECT id, payload::text FROM outbox_events WHERE processed_at IS NULL"
                    + " ORDER BY created_at, position LIMIT ? FOR UPDATE SKIP LOCKED");
        PreparedStatement mark =
            connection.prepareStatement(
                "UPDATE outbox_events SET processed_at = now() WHERE id = ?")) {
      connection.setAutoCommit(false);
      while (drained < setup.events() && System.nanoTime() < deadline) {
        long tickStart = System.nanoTime();
        select.setInt(1, setup.batch());
        List<String> payloads = new ArrayList<>();
        try (ResultSet rs = select.executeQuery()) {
          while (rs.next()) {
            mark.setObject(1, rs.getObject(1));
            payloads.add(rs.getString(2));
            mark.executeUpdate();
          }
        }
        connection.commit();
        drained += payloads.size();
        deliveries.addPayloads(payloads);
        long sleep = TimeUnit.MILLISECONDS.toNanos(tickMillis) - (System.nanoTime() - tickStart);
        if (sleep > 0 && drained < setup.events()) {
          TimeUnit.NANOSECONDS.sleep(sleep);
        }
      }
    }
    double seconds = (System.nanoTime() - start) / 1e9;
    result
        .put("mode", "ticked")
        .put("events", setup.events())
        .put("aggregates", setup.aggregates())
        .put("batch", setup.batch())
        .put("tick_ms", tickMillis)
        .put("drained", drained)
        .put("complete", drained >= setup.events())
        .put("seconds", Result.round(seconds, 3))
        .put("events_per_s", Result.round(drained / seconds, 0));
    Deliveries.Check check = deliveries.check(written);
    // Only what was drained within --max-seconds can have been delivered.
    long notDrained = setup.events() - drained;
    new Deliveries.Check(check.lost() - notDrained, check.reordered(), check.duplicates())
        .into(result);
    return result;
  }
}
