package dev.pgoutbox.example.bench;

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
 * {@code bench baseline}: the naive relay most write-ups show, on the same data as drain: every
 * poll tick, select one batch, "publish" it, and mark each row with its own UPDATE.
 */
@Command(
    name = "baseline",
    mixinStandardHelpOptions = true,
    description =
        "The naive relay (one batch per --tick, one UPDATE per row) on drain's data, for"
            + " --max-seconds at most.")
final class BaselineCommand implements Callable<Integer> {

  @Mixin BenchOptions options;

  @Mixin DataOptions data;

  @Option(
      names = "--tick-ms",
      defaultValue = "100",
      description = "Poll interval in ms (default ${DEFAULT-VALUE})")
  long tickMillis;

  @Option(
      names = "--max-seconds",
      defaultValue = "30",
      description = "Stop after this long even if events remain (default ${DEFAULT-VALUE})")
  int maxSeconds;

  @Override
  public Integer call() throws Exception {
    Drains.Setup setup = DrainCommand.setup(options, data, new RelayOptions());
    try (BenchDatabase db = BenchDatabase.open(options)) {
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
          deliveries.addAll(NaiveMessages.of(payloads));
          long sleep = TimeUnit.MILLISECONDS.toNanos(tickMillis) - (System.nanoTime() - tickStart);
          if (sleep > 0 && drained < setup.events()) {
            TimeUnit.NANOSECONDS.sleep(sleep);
          }
        }
      }
      double seconds = (System.nanoTime() - start) / 1e9;
      Result result = DrainCommand.describe(new Result("baseline"), setup);
      result
          .put("tick_ms", tickMillis)
          .put("drained", drained)
          .put("complete", drained >= setup.events());
      result
          .put("seconds", Result.round(seconds, 3))
          .put("events_per_s", Result.round(drained / seconds, 0));
      Deliveries.Check check = deliveries.check(written);
      // Only what was drained within --max-seconds can have been delivered.
      long notDrained = setup.events() - drained;
      new Deliveries.Check(check.lost() - notDrained, check.reordered(), check.duplicates())
          .into(result);
      db.describe(result);
      result.print(System.out, options.json);
      return result.verified() ? 0 : 1;
    }
  }
}
