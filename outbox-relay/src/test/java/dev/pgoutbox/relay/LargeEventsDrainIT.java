package dev.pgoutbox.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.pgoutbox.core.Outbox;
import dev.pgoutbox.core.OutboxEvent;
import dev.pgoutbox.core.RawJson;
import dev.pgoutbox.testing.TestSchema;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A backlog of 40 events of 2 to 8 MiB (about 200 MiB, half of them compressible, which PostgreSQL
 * stores compressed to a small fraction) drains through a relay in a child JVM of 128 MiB heap, in
 * order per aggregate, each batch within the byte budget but for a lone event larger than it. With
 * batches bounded by rows alone, the first claim read the whole backlog and the child ran out of
 * memory on every try. Under both orderings; per-aggregate order is checked under strict.
 */
class LargeEventsDrainIT {

  @RegisterExtension static final TestSchema db = TestSchema.migrated();

  private static final int EVENTS = 40;
  private static final int AGGREGATES = 4;
  private static final int MIB = 1_048_576;

  /** Smaller than the largest events, so some go out alone. */
  private static final int BUDGET = 7 * MIB;

  private static final Pattern BATCH = Pattern.compile("^BATCH bytes=(\\d+) events=(.*)$");

  @ParameterizedTest
  @EnumSource(Ordering.class)
  void backlogOfLargeEventsDrainsInOrderWithinTheByteBudgetInASmallHeap(Ordering ordering)
      throws Exception {
    db.execute("TRUNCATE outbox_events");
    long seed = Long.getLong("pgoutbox.large.seed", System.nanoTime());
    Random random = new Random(seed);
    Outbox writer = Outbox.builder().schema(db.schema()).maxPayloadBytes(9 * MIB).build();
    int[] seqs = new int[AGGREGATES];
    for (int i = 0; i < EVENTS; i++) {
      int aggregate = random.nextInt(AGGREGATES);
      int seq = ++seqs[aggregate];
      int size = 2 * MIB + random.nextInt(6 * MIB);
      String blob;
      if (i % 2 == 0) {
        blob = "ab".repeat(size / 2); // compresses to a fraction of a percent
      } else {
        byte[] bytes = new byte[size * 3 / 4];
        random.nextBytes(bytes);
        blob = Base64.getEncoder().encodeToString(bytes); // does not compress
      }
      String payload = "{\"seq\": " + seq + ", \"blob\": \"" + blob + "\"}";
      try (Connection tx = db.connect()) {
        tx.setAutoCommit(false);
        writer.append(
            tx,
            OutboxEvent.of("big", "agg-" + aggregate, "blob.written", RawJson.of(payload))
                .withHeader("n", Integer.toString(i)));
        tx.commit();
      }
    }

    ProcessBuilder child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:+ExitOnOutOfMemoryError",
                "-cp",
                System.getProperty("java.class.path"),
                Drain.class.getName(),
                db.jdbcUrl(),
                db.schema(),
                Integer.toString(BUDGET),
                Integer.toString(EVENTS),
                ordering.name())
            .redirectErrorStream(true);
    Process process = child.start();
    List<String> output = new ArrayList<>();
    try (BufferedReader out =
        new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = out.readLine(); line != null; line = out.readLine()) {
        output.add(line);
      }
    }
    boolean ended = process.waitFor(3, TimeUnit.MINUTES);
    if (!ended) {
      process.destroyForcibly();
    }
    String what = "seed " + seed + ", child output:\n" + String.join("\n", tail(output));
    assertThat(ended).as(what).isTrue();
    assertThat(process.exitValue()).as("the child drained in 128 MiB (" + what + ")").isZero();

    Map<String, Integer> lastSeq = new HashMap<>();
    java.util.Set<String> seen = new java.util.HashSet<>();
    int delivered = 0;
    int batches = 0;
    int alone = 0;
    for (String line : output) {
      Matcher m = BATCH.matcher(line);
      if (!m.matches()) {
        continue;
      }
      batches++;
      long bytes = Long.parseLong(m.group(1));
      String[] events = m.group(2).split(",");
      if (events.length == 1 && bytes > BUDGET) {
        alone++;
      } else {
        assertThat(bytes)
            .as("batch within the budget: " + line + ", " + what)
            .isLessThanOrEqualTo(BUDGET);
      }
      for (String event : events) {
        assertThat(seen.add(event)).as("%s once (%s)", event, what).isTrue();
        String[] parts = event.split(":");
        int seq = Integer.parseInt(parts[1]);
        int previous = lastSeq.getOrDefault(parts[0], 0);
        if (ordering == Ordering.STRICT) {
          assertThat(seq)
              .as("%s in order after %d (%s)", event, previous, what)
              .isEqualTo(previous + 1);
        }
        lastSeq.put(parts[0], seq);
        delivered++;
      }
    }
    assertThat(delivered).as(what).isEqualTo(EVENTS);
    assertThat(batches).as("the budget cut the backlog into batches: " + what).isGreaterThan(10);
    assertThat(alone).as("events larger than the budget went out alone: " + what).isPositive();
    assertThat(db.queryLong("select count(*) from outbox_events where processed_at is null"))
        .isZero();
  }

  /** The last 40 lines of the child's output that are not debug logging. */
  private static List<String> tail(List<String> lines) {
    List<String> kept = lines.stream().filter(line -> !line.contains(" DEBUG ")).toList();
    return kept.subList(Math.max(0, kept.size() - 40), kept.size());
  }

  /**
   * The child: a relay with the byte budget and a publisher that keeps only each event's aggregate,
   * seq and size, printed per batch. Exits 0 once every event is published, 2 on timeout, 3 when
   * the heap runs out ({@code -XX:+ExitOnOutOfMemoryError}).
   */
  public static final class Drain {

    private static final Pattern SEQ = Pattern.compile("^\\{\"seq\": (\\d+)");

    public static void main(String[] args) throws Exception {
      PGSimpleDataSource dataSource = new PGSimpleDataSource();
      dataSource.setUrl(args[0]);
      String schema = args[1];
      int budget = Integer.parseInt(args[2]);
      int events = Integer.parseInt(args[3]);
      CountDownLatch all = new CountDownLatch(events);
      AggregateSequencer sequencer = AggregateSequencer.ofDefaults();
      Publisher publisher =
          new Publisher() {
            @Override
            public CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
              long bytes = 0;
              StringBuilder line = new StringBuilder();
              for (OutboxMessage m : batch) {
                bytes += m.payload().length();
                for (Map.Entry<String, String> h : m.headers().entrySet()) {
                  bytes += h.getKey().length() + h.getValue().length() + 6; // as JSON text
                }
                bytes += 2;
                Matcher seq = SEQ.matcher(m.payload().substring(0, 20));
                if (!seq.find()) {
                  throw new IllegalStateException("no seq in " + m.payload().substring(0, 20));
                }
                if (line.length() > 0) {
                  line.append(',');
                }
                line.append(m.aggregateId()).append(':').append(seq.group(1));
              }
              System.out.println("BATCH bytes=" + bytes + " events=" + line);
              return sequencer.publish(
                  batch,
                  m -> {
                    all.countDown();
                    return CompletableFuture.completedFuture(PublishResult.published());
                  });
            }
          };
      ScheduledExecutorService executor = Executors.newScheduledThreadPool(2);
      OutboxRelay relay =
          OutboxRelay.builder()
              .name("large")
              .dataSource(dataSource)
              .schema(schema)
              .publisher(publisher)
              .executor(executor)
              .config(
                  RelayConfig.builder()
                      .batchSize(200)
                      .maxBatchBytes(budget)
                      .pollInterval(Duration.ofMillis(50))
                      .ordering(Ordering.valueOf(args[4]))
                      .build())
              .build();
      relay.start();
      boolean drained = all.await(150, TimeUnit.SECONDS);
      relay.stop(Duration.ofSeconds(10));
      executor.shutdownNow();
      System.out.flush();
      System.exit(drained ? 0 : 2);
    }
  }
}
