package dev.pgoutbox.tools.chaos;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.db.OutboxRoles;
import dev.pgoutbox.db.OutboxSchema;
import dev.pgoutbox.relay.DeadLetterPolicy;
import dev.pgoutbox.testing.DeliveryChecker;
import dev.pgoutbox.testing.EmbeddedPostgresServer;
import dev.pgoutbox.testing.Files2;
import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.tools.chaos.FaultPlan.Kind;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code chaos}: relay processes, writers, a broker and an embedded PostgreSQL, with faults on a
 * printed schedule, publisher-side faults inside the relays, writers contending per aggregate, dead
 * letters retried during the run, and an independent checker that consumes everything from the
 * broker and judges it against the order PostgreSQL committed. Exits 1 on any loss, reordering,
 * unexplained dead letter or accounting mismatch, 3 when the checker could not read.
 */
@Command(
    name = "chaos",
    mixinStandardHelpOptions = true,
    sortOptions = false,
    description = {
      "Proves 'nothing lost, order per aggregate kept' under faults: --relays relay processes"
          + " (separate JVMs) publish what --writers write across --aggregates for --seconds,"
          + " while relays are killed with SIGKILL and one is frozen with SIGSTOP past its lease,"
          + " the broker goes away, PostgreSQL is killed, and the relays' network to it is cut and"
          + " partitioned, on a schedule printed first. Inside the relays, their publishers inject"
          + " poison events, random permanent and retryable answers, absurd Retry-After hints and"
          + " batches slower than publishTimeout (--no-publisher-faults: none); writers contend"
          + " for each aggregate; dead letters are retried through OutboxAdmin during the run.",
      "An independent checker consumes the broker and reports written, published, lost,"
          + " reordered (against the writers' commit order), duplicates, dead letters with their"
          + " reasons, held, retried and the waits. Exit code 1 on any loss, reordering,"
          + " unexplained dead letter or count mismatch; exit code 3 when the checker could not"
          + " read everything the broker holds (checker_error: nothing is counted as lost then).",
      "Runs on its own embedded PostgreSQL (it kills it) and, by default, an embedded Kafka.",
      "With --source wal the relays are WAL relays (WalRelay): one reads the outbox's logical"
          + " replication slot, the others stand by and drain parked events; each relay kill kills"
          + " the reader (its WAL sender ends with it), and the embedded PostgreSQL runs with"
          + " wal_level=logical. Each 120 s block then ends with a fault of the slot, in turn:"
          + " dropped by an operator, the publication not publishing inserts for a second,"
          + " invalidated by max_slot_wal_keep_size, or the primary killed and its standby"
          + " promoted; the relays fall back to the table, and all"
          + " are then restarted together on a new slot (concurrent first starts)."
    })
public final class ChaosCommand implements Callable<Integer> {

  private static final String SCHEMA = "public";

  /** The WAL relays' slot: {@code WalRelay}'s default for {@link #SCHEMA}. */
  private static final String WAL_SLOT = "pgoutbox_" + SCHEMA;

  /**
   * With --source wal: logical decoding, and a WAL sender that gives up on a silent reader after 5
   * s (60 s by default), so that the slot is free soon after its reader is frozen or cut off.
   */
  private static final Map<String, String> WAL_SETTINGS = walSettings();

  /** How long the run waits, before writing, for a WAL relay to stream the slot. */
  private static final Duration READER_START_WAIT = Duration.ofSeconds(120);

  /** How long the checker may take, at the verdict, to read what the broker holds. */
  private static final Duration CHECKER_GRACE = Duration.ofSeconds(10);

  @Spec CommandSpec spec;

  @Option(
      names = "--relays",
      paramLabel = "N",
      defaultValue = "3",
      description = "Relay processes (default: ${DEFAULT-VALUE})")
  int relays = 3;

  @Option(
      names = "--writers",
      paramLabel = "N",
      defaultValue = "4",
      description = "Writer threads (default: ${DEFAULT-VALUE})")
  int writers = 4;

  @Option(
      names = "--aggregates",
      paramLabel = "N",
      defaultValue = "1000",
      description = "Aggregates written to (default: ${DEFAULT-VALUE})")
  int aggregates = 1000;

  @Option(
      names = "--seconds",
      paramLabel = "S",
      defaultValue = "120",
      description = "How long the writers write, faults included (default: ${DEFAULT-VALUE})")
  int seconds = 120;

  @Option(
      names = "--rate",
      paramLabel = "N",
      defaultValue = "400",
      description = "Events per second, all writers together (default: ${DEFAULT-VALUE})")
  int rate = 400;

  @Option(
      names = "--source",
      paramLabel = "SOURCE",
      defaultValue = "table",
      description =
          "table: the relays claim from the table (OutboxRelay); wal: they read a logical"
              + " replication slot (WalRelay) (default: ${DEFAULT-VALUE})")
  String source = "table";

  @Option(
      names = "--transport",
      paramLabel = "TRANSPORT",
      defaultValue = "rows",
      description =
          "rows: the writers insert rows; messages: they emit logical decoding messages, no row"
              + " (needs --source wal). With messages the slot faults (drop, publication drift,"
              + " invalidation, promotion without a failover slot) are left out: a lost slot loses"
              + " the messages it had not confirmed, by design (docs/wal-messages.md); the ledger"
              + " of committed events is read from a second slot of its own"
              + " (default: ${DEFAULT-VALUE})")
  String transport = "rows";

  @Option(
      names = "--broker",
      paramLabel = "BROKER",
      defaultValue = "kafka",
      description = "kafka (embedded), rabbitmq or nats (default: ${DEFAULT-VALUE})")
  String broker = "kafka";

  @Option(
      names = "--rabbitmq",
      paramLabel = "URI",
      defaultValue = "amqp://guest:guest@127.0.0.1:5672",
      description = "RabbitMQ URI for --broker rabbitmq (default: ${DEFAULT-VALUE})")
  String rabbitmq = "amqp://guest:guest@127.0.0.1:5672";

  @Option(
      names = "--kill-every",
      paramLabel = "S",
      defaultValue = "5",
      description = "Seconds between relay kills (default: ${DEFAULT-VALUE})")
  int killEvery = 5;

  @Option(
      names = "--relay-publish-timeout",
      paramLabel = "S",
      defaultValue = "30",
      description =
          "The relays' publishTimeout in seconds; a relay is frozen for this + 12 s, longer than"
              + " PostgreSQL keeps its transaction (default: ${DEFAULT-VALUE})")
  int relayPublishTimeout = 30;

  @Option(
      names = "--drain-timeout",
      paramLabel = "S",
      defaultValue = "180",
      description =
          "Seconds to wait, after the writers stop, for every event to arrive (default:"
              + " ${DEFAULT-VALUE})")
  int drainTimeout = 180;

  @Option(
      names = "--writers-per-aggregate",
      paramLabel = "N",
      defaultValue = "2",
      description =
          "Writers that write to each aggregate at the same moment, contending for its lock"
              + " (1 to --writers; default: ${DEFAULT-VALUE})")
  int writersPerAggregate = 2;

  @Option(
      names = "--dead-letter-policy",
      paramLabel = "POLICY",
      defaultValue = "hold",
      description =
          "The relays' dead-letter policy, one for the whole fleet: hold or release (default:"
              + " ${DEFAULT-VALUE})")
  String deadLetterPolicy = "hold";

  @Option(
      names = "--no-publisher-faults",
      description =
          "Turns off the publisher-side faults injected inside the relays (poison events, random"
              + " permanent and retryable answers, absurd Retry-After hints, slow batches), on by"
              + " default")
  boolean noPublisherFaults;

  @Option(
      names = "--poison-every",
      paramLabel = "N",
      defaultValue = "500",
      description =
          "With publisher faults, every N-th event written is of the unroutable type 'poison'"
              + " (0: none; default: ${DEFAULT-VALUE})")
  int poisonEvery = 500;

  @Option(
      names = "--slow-batch-every",
      paramLabel = "S",
      defaultValue = "60",
      description =
          "With publisher faults, each relay makes a batch slower than its publishTimeout every S"
              + " seconds (0: none; default: ${DEFAULT-VALUE})")
  int slowBatchEvery = 60;

  @Option(
      names = "--retry-dead-letters-every",
      paramLabel = "S",
      defaultValue = "5",
      description =
          "Every S seconds while the writers write, retry about half the dead letters through"
              + " OutboxAdmin (0: never; default: ${DEFAULT-VALUE})")
  int retryDeadLettersEvery = 5;

  @Option(
      names = "--relay-max-retry-hint",
      paramLabel = "S",
      defaultValue = "3",
      description =
          "The relays' maxRetryHint in seconds: the cap of a broker's Retry-After"
              + " (default: ${DEFAULT-VALUE})")
  int relayMaxRetryHint = 3;

  @Option(
      names = "--seed",
      paramLabel = "N",
      description = "Seed of the fault schedule (default: random)")
  @Nullable Long seed;

  @Option(names = "--json", description = "Print the result as one JSON line")
  boolean json;

  @Option(names = "--keep", description = "Keep the run's directory (relay logs, PostgreSQL data)")
  boolean keep;

  @Override
  public Integer call() throws Exception {
    validate();
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter log = json ? spec.commandLine().getErr() : out;
    long runSeed = seed != null ? seed : ThreadLocalRandom.current().nextLong(1, 1_000_000);
    // The relay's idle-transaction timeout is publishTimeout + 10 s; the freeze outlasts it.
    FaultPlan plan =
        FaultPlan.of(
            runSeed,
            seconds,
            relays,
            killEvery,
            relayPublishTimeout + 12,
            source.equals("wal") && !messages());
    Path runDir = Files.createTempDirectory("pgoutbox-chaos");
    Deque<AutoCloseable> resources = new ArrayDeque<>();
    try {
      boolean wal = source.equals("wal");
      EmbeddedPostgresServer first =
          EmbeddedPostgresServer.start(runDir.resolve("postgres"), wal ? WAL_SETTINGS : Map.of());
      PostgresPair postgres = new PostgresPair(first, STANDBY_SETTINGS);
      resources.push(postgres);
      // With WAL relays the writers, like the relays, reach the primary through an address that a
      // standby's promotion moves.
      String databaseUrl = first.jdbcUrl();
      if (wal) {
        TcpProxy writersAddress = postgres.address(TcpProxy.to(first.port()));
        resources.push(writersAddress);
        databaseUrl = writersAddress.route(first.jdbcUrl());
      }
      HikariDataSource dataSource = pool(databaseUrl, writers + 2);
      resources.push(dataSource);
      OutboxSchema.migrate(dataSource, SCHEMA);
      if (wal) {
        createWalSlot(dataSource);
        if (messages()) {
          OutboxRoles.grantWalMessages(dataSource, SCHEMA, "postgres", "postgres");
          MessageLedger.createSlot(dataSource, WAL_SLOT);
          log.println(
              "chaos: --transport messages: no slot faults (a lost slot loses the messages it had"
                  + " not confirmed, by design); ledger slot "
                  + MessageLedger.slot(WAL_SLOT));
        }
        log.println("chaos: " + postgres.addStandby());
      }
      TcpProxy relayNetwork = postgres.address(TcpProxy.to(first.port()));
      resources.push(relayNetwork);
      ChaosBroker chaosBroker = startBroker();
      resources.push(chaosBroker);
      DeliveryChecker checker = new DeliveryChecker();
      CheckerFeed feed = chaosBroker.consume(checker);
      resources.push(feed);

      boolean faultsOn = !noPublisherFaults;
      DeadLetterPolicy policy =
          deadLetterPolicy.equals("release")
              ? DeadLetterPolicy.RELEASE_AGGREGATE
              : DeadLetterPolicy.HOLD_AGGREGATE;
      List<String> relayArguments = new ArrayList<>();
      relayArguments.addAll(
          List.of(
              "--jdbc-url",
              "jdbc:postgresql://127.0.0.1:"
                  + relayNetwork.port()
                  + "/postgres?user=postgres&connectTimeout=5&socketTimeout=10&tcpKeepAlive=true",
              "--schema",
              SCHEMA,
              "--publish-timeout",
              Integer.toString(relayPublishTimeout),
              "--dead-letter-policy",
              deadLetterPolicy,
              "--max-retry-hint",
              Integer.toString(relayMaxRetryHint),
              "--source",
              source,
              "--transport",
              transport));
      if (source.equals("wal") && !messages()) {
        // The ledger reads what was committed from the table, so delivered rows must stay: the
        // WAL relay marks them here instead of deleting them (its default); the deletion's own
        // guarantees are WalRelayIT's.
        relayArguments.addAll(List.of("--completion", "mark"));
      }
      if (faultsOn) {
        relayArguments.addAll(
            List.of(
                "--chaos-publisher-faults",
                Long.toString(runSeed),
                "--chaos-slow-batch-every",
                Integer.toString(slowBatchEvery),
                // Slow batches end with the writing (at the latest): the drain settles every event.
                "--chaos-slow-batches-until",
                Long.toString(System.currentTimeMillis() + seconds * 1000L)));
      }
      relayArguments.addAll(chaosBroker.relayArguments());
      RelayFleet fleet = new RelayFleet(relays, relayArguments, runDir);
      resources.push(fleet);

      log.printf(
          Locale.ROOT,
          "chaos run: %d %s relay processes (dead-letter policy %s), %d writers (%d per"
              + " aggregate), %d aggregates, %d s at %d events/s, broker %s%n  run directory %s%n",
          relays,
          wal ? "WAL" : "table",
          policy,
          writers,
          Math.min(writersPerAggregate, writers),
          aggregates,
          seconds,
          rate,
          chaosBroker.describe(),
          runDir);
      plan.print(log, chaosBroker);
      if (faultsOn) {
        log.printf(
            Locale.ROOT,
            "publisher faults (inside each relay, seed %d): every %s event of type '%s'"
                + " unroutable (permanent); %s%% of events refused for good and %s%% answered"
                + " retryable with Retry-After none/500 ms/2 s; on its first attempt the event at"
                + " every position %d mod %d answered retryable with Retry-After Long.MAX_VALUE s"
                + " or 200 years (the relays cap hints at %d s); a batch every %d s (the first at"
                + " random after a relay starts) slower than publishTimeout (%d s);"
                + " dead letters retried %s%n",
            runSeed,
            poisonEvery == 0 ? "no" : ordinal(poisonEvery),
            PublisherFaults.POISON_EVENT_TYPE,
            PublisherFaults.PERMANENT_PERCENT,
            PublisherFaults.RETRYABLE_PERCENT,
            Math.floorMod(runSeed, PublisherFaults.ABSURD_HINT_EVERY),
            PublisherFaults.ABSURD_HINT_EVERY,
            relayMaxRetryHint,
            slowBatchEvery,
            relayPublishTimeout,
            retryDeadLettersEvery == 0
                ? "never"
                : "every " + retryDeadLettersEvery + " s (about half of them)");
      } else {
        log.println("publisher faults: none (--no-publisher-faults)");
      }
      log.flush();

      fleet.startAll();
      if (wal) {
        awaitWalReader(dataSource, log);
      }
      Writers writing =
          new Writers(
              dataSource,
              SCHEMA,
              writers,
              writersPerAggregate,
              aggregates,
              rate,
              runSeed,
              faultsOn ? poisonEvery : 0,
              messages()
                  ? dev.pgoutbox.core.OutboxTransport.MESSAGES
                  : dev.pgoutbox.core.OutboxTransport.ROWS);
      FaultInjector faults =
          new FaultInjector(
              plan,
              fleet,
              chaosBroker,
              postgres,
              relayNetwork,
              dataSource,
              wal ? WAL_SLOT : null,
              log);
      DeadLetterRetrier retrier =
          retryDeadLettersEvery == 0
              ? null
              : new DeadLetterRetrier(dataSource, SCHEMA, retryDeadLettersEvery, runSeed, log);
      long started = System.nanoTime();
      long startedAtMillis = System.currentTimeMillis();
      writing.start();
      faults.start();
      if (retrier != null) {
        retrier.start();
      }
      while (System.nanoTime() - started < TimeUnit.SECONDS.toNanos(seconds)) {
        LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(10));
        log.printf(
            Locale.ROOT,
            "chaos t=%.0f written %d, delivered %d, received %d%n",
            (System.nanoTime() - started) / 1e9,
            writing.written(),
            checker.delivered(),
            checker.received());
        log.flush();
      }
      writing.stop();
      if (retrier != null) {
        retrier.windDown();
      }
      faults.awaitDone();
      Map<String, Set<Integer>> retried = retrier == null ? Map.of() : retrier.retried();
      // The operator may still retry during the drain (see DeadLetterRetrier.windDown).
      long drainStarted = System.nanoTime();
      long drainDeadline = drainStarted + TimeUnit.SECONDS.toNanos(drainTimeout);
      while (System.nanoTime() < drainDeadline && !feed.failed()) {
        CommitLedger.Result now = settled(dataSource, checker, policy, retried);
        if (now != null && (retrier == null || !retrier.running() || now.deadLetters() == 0)) {
          break;
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
        if (retrier != null) {
          retried = retrier.retried();
        }
      }
      if (retrier != null) {
        retrier.stop();
        retried = retrier.retried();
      }
      double drainSeconds = (System.nanoTime() - drainStarted) / 1e9;
      // Late duplicates still in flight have a moment to show up.
      LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
      // Whether the checker read all the broker holds: if not, what it missed is not a loss.
      String checkerError = feed.readError(CHECKER_GRACE);
      CommitLedger.Result ledger = ledger(dataSource).judge(checker, policy, retried);
      for (String sample : ledger.unaccountedSamples()) {
        log.println("chaos: unaccounted " + sample);
      }
      List<String> exited = fleet.exitedOnTheirOwn();
      TableCounts table = TableCounts.of(dataSource);
      PublisherFaultLog injected = PublisherFaultLog.read(runDir);
      TimeoutAnswers timeoutAnswers =
          TimeoutAnswers.of(dataSource, injected.publishedBeforeTimeout());

      ChaosReport report = new ChaosReport();
      report
          .put("scenario", "chaos")
          .put("broker", broker)
          .put("source", source)
          .put("transport", transport)
          .put("relays", relays)
          .put("writers", writers)
          .put("writers_per_aggregate", Math.min(writersPerAggregate, writers))
          .put("aggregates", aggregates)
          .put("seconds", seconds)
          .put("seed", runSeed)
          .put("dead_letter_policy", deadLetterPolicy)
          .put("publisher_faults", faultsOn)
          .put("written", writing.written())
          .put("written_in_db", ledger.rows())
          .put("published", table.published())
          .put("delivered", checker.delivered())
          .put("lost", checkerError == null ? ledger.unaccounted() : null)
          .put("unaccounted", checkerError == null ? ledger.unaccounted() : null)
          .put("reordered", ledger.reordered())
          .put("delivered_past_dead_letter", ledger.deliveredPastDeadLetter())
          .put("commit_order_mismatches", ledger.commitOrderMismatches())
          .put("duplicates", checker.duplicates())
          .put("unexpected", ledger.unexpected())
          .put("unreadable", checker.unreadable())
          .put("dead_letters", ledger.deadLetters())
          .put("dead_letters_with_reason", ledger.deadLettersWithReason())
          .put("dead_letters_injected", ledger.deadLettersInjected())
          .put("held_behind_dead_letters", ledger.held())
          .put("dead_letter_retries", retrier == null ? 0 : retrier.retries())
          .put("retried_delivered", ledger.retriedDelivered())
          .put("retried_dead_again", ledger.retriedDeadAgain())
          .put("poison_written", writing.poisonWritten())
          .put("injected_poison", injected.count("poison"))
          .put("injected_permanent", injected.count("permanent"))
          .put("injected_retryable", injected.count("retryable"))
          .put("injected_absurd_hints", injected.count("absurd-hint"))
          .put("slow_batches", injected.count("slow-batch"))
          .put("slow_batches_timed_out", injected.count("slow-batch-cancelled"))
          .put("timeout_answers_kept", timeoutAnswers.kept())
          .put("timeout_answers_charged", timeoutAnswers.charged())
          .put("writer_contention", writing.contended())
          .put("wait_p50_ms", checker.waitPercentileMillis(50))
          .put("wait_p99_ms", checker.waitPercentileMillis(99))
          .put("longest_wait_ms", checker.longestWaitMillis())
          .put(
              "longest_wait_written_at_s",
              checker.delivered() == 0
                  ? null
                  : Math.round((checker.longestWaitWrittenAt() - startedAtMillis) / 100.0) / 10.0)
          .put("drain_seconds", Math.round(drainSeconds * 10) / 10.0)
          .put("relay_kills", fleet.kills())
          .put("reader_kills", wal ? faults.readerKills() : null)
          .put("relay_starts", fleet.starts())
          .put("relay_freezes", plan.count(Kind.RELAY_FREEZE))
          .put("frozen_in_transaction", faults.frozenInTransaction())
          .put("broker_outages", plan.count(Kind.BROKER_OUTAGE))
          .put("postgres_crashes", plan.count(Kind.POSTGRES_CRASH))
          .put("network_cuts", plan.count(Kind.NETWORK_CUT))
          .put("network_partitions", plan.count(Kind.NETWORK_PARTITION))
          .put("slot_drops", wal ? plan.count(Kind.SLOT_DROP) : null)
          .put("publication_drifts", wal ? plan.count(Kind.PUBLICATION_DRIFT) : null)
          .put("slot_invalidations", wal ? plan.count(Kind.SLOT_INVALIDATION) : null)
          .put("standby_promotions", wal ? postgres.promotions() : null)
          .put("fleet_restarts_on_a_new_slot", wal ? faults.fleetRestarts() : null)
          .put(
              "wal_fall_backs_logged",
              wal ? fleet.linesInLogs(FaultInjector.WAL_FALL_BACK_LINE) : null)
          .put("fault_failures", faults.failures())
          .put("writer_retries", writing.failedAttempts())
          .put("ambiguous_commits", writing.ambiguousCommits())
          .put("relays_exited", exited.size())
          .put("checker_error", checkerError);
      if (checkerError != null) {
        report.put("unconfirmed", ledger.unaccounted());
      }
      feed.figures().forEach(report::put);
      ChaosReport.Verdict verdict = report.judge();
      if (verdict != ChaosReport.Verdict.PASSED) {
        FailureState.print(log, dataSource, fleet, SCHEMA);
      }
      report.print(out, json, exited);
      out.flush();
      return verdict.exitCode();
    } finally {
      closeAll(resources, log);
      if (!keep) {
        Files2.deleteRecursively(runDir);
      }
    }
  }

  /** What PostgreSQL committed: the table's rows, or with messages the ledger slot's messages. */
  private CommitLedger ledger(HikariDataSource dataSource) throws SQLException {
    return messages()
        ? MessageLedger.read(dataSource, SCHEMA, WAL_SLOT)
        : CommitLedger.read(dataSource, SCHEMA);
  }

  private boolean messages() {
    return transport.equals("messages");
  }

  /**
   * The ledger once the run has settled: every committed event delivered, dead, or (under
   * HOLD_AGGREGATE) held behind a dead one, nothing else pending; null before, or while the
   * database does not answer.
   */
  private CommitLedger.@Nullable Result settled(
      HikariDataSource dataSource,
      DeliveryChecker checker,
      DeadLetterPolicy policy,
      Map<String, Set<Integer>> retried) {
    try {
      CommitLedger.Result result = ledger(dataSource).judge(checker, policy, retried);
      return result.unaccounted() == 0 && result.pendingNotHeld() == 0 ? result : null;
    } catch (SQLException e) {
      return null;
    }
  }

  private static String ordinal(int n) {
    return n
        + (n % 100 >= 11 && n % 100 <= 13
            ? "th"
            : switch (n % 10) {
              case 1 -> "st";
              case 2 -> "nd";
              case 3 -> "rd";
              default -> "th";
            });
  }

  /**
   * The events a slow batch had published before the relay's timeout, looked up at the end: kept
   * when processed with no attempt charged since (attempts still {@code attempt - 1}), charged when
   * their attempts grew (a relay that threw the answers away, or a later rollback: a relay killed
   * or cut off before its commit).
   */
  private record TimeoutAnswers(long kept, long charged) {

    static TimeoutAnswers of(HikariDataSource dataSource, List<String> published) {
      if (published.isEmpty()) {
        return new TimeoutAnswers(0, 0);
      }
      long kept = 0;
      long charged = 0;
      try (Connection connection = dataSource.getConnection();
          java.sql.PreparedStatement query =
              connection.prepareStatement(
                  "select processed_at is not null, attempts from "
                      + SCHEMA
                      + ".outbox_events where id = ?")) {
        for (String entry : published) {
          int colon = entry.lastIndexOf(':');
          query.setObject(1, java.util.UUID.fromString(entry.substring(0, colon)));
          int attempt = Integer.parseInt(entry.substring(colon + 1));
          try (ResultSet rs = query.executeQuery()) {
            if (!rs.next()) {
              continue;
            }
            if (rs.getBoolean(1) && rs.getInt(2) == attempt - 1) {
              kept++;
            } else {
              charged++;
            }
          }
        }
      } catch (SQLException | RuntimeException e) {
        return new TimeoutAnswers(-1, -1);
      }
      return new TimeoutAnswers(kept, charged);
    }
  }

  private void validate() {
    requireBetween("--relays", relays, 1, 16);
    requireBetween("--writers", writers, 1, 64);
    requireBetween("--aggregates", aggregates, 1, 10_000_000);
    requireBetween("--seconds", seconds, 10, 86_400);
    requireBetween("--rate", rate, 1, 100_000);
    requireBetween("--kill-every", killEvery, 1, 3_600);
    requireBetween("--drain-timeout", drainTimeout, 1, 86_400);
    requireBetween("--relay-publish-timeout", relayPublishTimeout, 1, 3_600);
    requireBetween("--writers-per-aggregate", writersPerAggregate, 1, writers);
    requireBetween("--poison-every", poisonEvery, 0, 1_000_000);
    requireBetween("--slow-batch-every", slowBatchEvery, 0, 86_400);
    requireBetween("--retry-dead-letters-every", retryDeadLettersEvery, 0, 86_400);
    requireBetween("--relay-max-retry-hint", relayMaxRetryHint, 1, 3_600);
    if (!List.of("hold", "release").contains(deadLetterPolicy)) {
      throw new ParameterException(
          spec.commandLine(),
          "--dead-letter-policy must be hold or release, was '" + deadLetterPolicy + "'");
    }
    if (!List.of("table", "wal").contains(source)) {
      throw new ParameterException(
          spec.commandLine(), "--source must be table or wal, was '" + source + "'");
    }
    if (!List.of("rows", "messages").contains(transport)) {
      throw new ParameterException(
          spec.commandLine(), "--transport must be rows or messages, was '" + transport + "'");
    }
    if (transport.equals("messages") && !source.equals("wal")) {
      throw new ParameterException(spec.commandLine(), "--transport messages needs --source wal");
    }
    if (!List.of("kafka", "rabbitmq", "nats").contains(broker)) {
      throw new ParameterException(
          spec.commandLine(), "--broker must be kafka, rabbitmq or nats, was '" + broker + "'");
    }
  }

  private void requireBetween(String option, int value, int min, int max) {
    if (value < min || value > max) {
      throw new ParameterException(
          spec.commandLine(),
          option + " must be between " + min + " and " + max + ", was " + value);
    }
  }

  /**
   * Creates the WAL relays' publication and slot before any relay or writer starts, as an operator
   * would: every event is then decoded from the slot, and no relay races another to create it.
   */
  private static void createWalSlot(HikariDataSource dataSource) throws SQLException {
    try (Connection connection = dataSource.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute(
          "CREATE PUBLICATION "
              + WAL_SLOT
              + " FOR TABLE "
              + SCHEMA
              + ".outbox_events WITH (publish = 'insert')");
      statement.execute(
          "SELECT pg_create_logical_replication_slot('" + WAL_SLOT + "', 'pgoutput')");
    }
  }

  /**
   * Waits (at most {@link #READER_START_WAIT}) until a relay streams the slot, so that the first
   * relay kill finds a reader to kill however slowly the relay processes start on a loaded machine.
   */
  private static void awaitWalReader(HikariDataSource dataSource, PrintWriter log)
      throws SQLException {
    long deadline = System.nanoTime() + READER_START_WAIT.toNanos();
    while (System.nanoTime() - deadline < 0) {
      try (Connection connection = dataSource.getConnection();
          Statement statement = connection.createStatement();
          ResultSet rs =
              statement.executeQuery(
                  "select count(*) from pg_replication_slots where active and slot_name = '"
                      + WAL_SLOT
                      + "'")) {
        rs.next();
        if (rs.getLong(1) > 0) {
          return;
        }
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
    }
    log.println(
        "chaos: no relay streams the slot after " + READER_START_WAIT + "; starting anyway");
  }

  /** The standby's own settings: it reports the rows it holds back to the primary. */
  private static final Map<String, String> STANDBY_SETTINGS = Map.of("hot_standby_feedback", "on");

  private static Map<String, String> walSettings() {
    Map<String, String> settings = new java.util.HashMap<>(EmbeddedPostgresServer.LOGICAL_DECODING);
    settings.put("wal_sender_timeout", "5s");
    return Map.copyOf(settings);
  }

  private ChaosBroker startBroker() throws Exception {
    return switch (broker) {
      case "rabbitmq" -> RabbitMqChaosBroker.start(rabbitmq);
      case "nats" -> NatsChaosBroker.start();
      default -> KafkaChaosBroker.start();
    };
  }

  private static HikariDataSource pool(String jdbcUrl, int size) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbcUrl);
    config.setPoolName("chaos-writers");
    config.setMaximumPoolSize(size);
    config.setConnectionTimeout(2_000);
    config.setInitializationFailTimeout(-1);
    return new HikariDataSource(config);
  }

  /** The outbox table's rows by state, in one query. */
  private record TableCounts(long rows, long published, long deadLetters, long pending) {

    /** All -1 while the database does not answer. */
    static TableCounts of(HikariDataSource dataSource) {
      try (Connection connection = dataSource.getConnection();
          Statement statement = connection.createStatement();
          ResultSet rs =
              statement.executeQuery(
                  "select count(*),"
                      + " count(*) filter (where processed_at is not null),"
                      + " count(*) filter (where dead_at is not null),"
                      + " count(*) filter (where processed_at is null and dead_at is null)"
                      + " from "
                      + SCHEMA
                      + ".outbox_events")) {
        rs.next();
        return new TableCounts(rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4));
      } catch (Exception e) {
        return new TableCounts(-1, -1, -1, -1);
      }
    }
  }

  private static void closeAll(Deque<AutoCloseable> resources, PrintWriter log) {
    while (!resources.isEmpty()) {
      AutoCloseable resource = resources.pop();
      try {
        resource.close();
      } catch (Exception e) {
        log.println("chaos: could not release " + resource + ": " + e);
      }
    }
  }
}
