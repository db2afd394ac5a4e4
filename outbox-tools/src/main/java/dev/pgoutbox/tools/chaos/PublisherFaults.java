package dev.pgoutbox.tools.chaos;

import static java.util.Objects.requireNonNull;

import dev.pgoutbox.relay.AggregateSequencer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PartialResults;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.Publisher;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The chaos run's publisher-side faults, injected inside each relay process by decorating its real
 * publisher. For each event of a batch, in order per aggregate, it decides a fault before anything
 * is sent:
 *
 * <ul>
 *   <li>events of type {@value #POISON_EVENT_TYPE} are unroutable: answered {@link
 *       PublishResult.Permanent}, every time (a retry of one dies again);
 *   <li>a random {@value #PERMANENT_PERCENT}% of the others are refused for good, once (a retry of
 *       one is likely to go through);
 *   <li>a random {@value #RETRYABLE_PERCENT}% are answered {@link PublishResult.Retryable} with a
 *       {@code Retry-After} hint of none, 500 ms or 2 s; and on its first attempt, every event
 *       whose position is {@code seed mod} {@value #ABSURD_HINT_EVERY} modulo {@value
 *       #ABSURD_HINT_EVERY} is answered retryable with an absurd hint, {@code
 *       Duration.ofSeconds(Long.MAX_VALUE)} or 200 years by turns, which the relay must cap;
 *   <li>a batch every {@code slowEvery} (the first 2 s after the start) is slow: in about a third
 *       of its aggregates (at least one) a random event is never answered, so the batch passes the
 *       relay's {@code publishTimeout}; the events before it are published and answered, those
 *       after it wait, and the relay must keep the answers and charge only the unanswered head.
 * </ul>
 *
 * What goes to the real publisher is, per aggregate, the run of events before the first fault, in
 * one call, so its own ordering and pipelining are untouched; an injected answer is given only once
 * everything before it in its aggregate was published (else it is held back, as {@link
 * AggregateSequencer} would), and everything after a fault is held back. Each injected fault is
 * printed on stdout as one line starting {@value #LOG_PREFIX}, which the chaos command counts in
 * the relays' logs. The random draws come from {@code seed} and the relay's name, so each relay
 * process draws its own. One relay calls {@link #publish} at a time; thread-safe.
 */
public final class PublisherFaults implements Publisher {

  /** The event type every publisher refuses as unroutable. */
  public static final String POISON_EVENT_TYPE = "poison";

  /** In every injected reason, so a dead letter's {@code last_error} shows it was injected. */
  static final String MARK = "(chaos)";

  /** Start of every line this prints. */
  static final String LOG_PREFIX = "chaos-publisher-fault ";

  static final String PERMANENT_PERCENT = "0.2";
  static final String RETRYABLE_PERCENT = "2";
  static final int ABSURD_HINT_EVERY = 100;

  private static final double PERMANENT_RATE = Double.parseDouble(PERMANENT_PERCENT) / 100;
  private static final double RETRYABLE_RATE = Double.parseDouble(RETRYABLE_PERCENT) / 100;
  private static final Duration FIRST_SLOW_AFTER = Duration.ofSeconds(2);

  private final Publisher inner;
  private final long seed;
  private final Random random;
  private final double permanentRate;
  private final double retryableRate;
  private final long slowEveryNanos;
  private boolean slowedOnce;
  private final long slowUntilNanos;
  private final LongSupplier nanoClock;
  private final PrintStream log;
  private long nextSlowAt;

  PublisherFaults(
      Publisher inner,
      long seed,
      Random random,
      double permanentRate,
      double retryableRate,
      Duration slowEvery,
      long slowUntilNanos,
      LongSupplier nanoClock,
      PrintStream log) {
    this.inner = requireNonNull(inner, "inner");
    this.seed = seed;
    this.random = random;
    this.permanentRate = permanentRate;
    this.retryableRate = retryableRate;
    this.slowEveryNanos = slowEvery.toNanos();
    this.slowUntilNanos = slowUntilNanos;
    this.nanoClock = nanoClock;
    this.log = log;
    // The first slow batch at a random time between 2 s and slowEvery after the start: relays
    // killed every few seconds would otherwise each begin their short life with one.
    this.nextSlowAt =
        slowEvery.isZero()
            ? Long.MAX_VALUE
            : nanoClock.getAsLong()
                + FIRST_SLOW_AFTER.toNanos()
                + random.nextLong(Math.max(1, slowEveryNanos - FIRST_SLOW_AFTER.toNanos()));
  }

  /**
   * {@code inner} with the chaos run's faults, seeded with {@code seed}, the relay's name and its
   * process id (a restarted relay draws anew); {@code slowEvery} zero makes no slow batches. Lines
   * go to stdout.
   */
  public static Publisher wrap(
      Publisher inner, long seed, String relayName, Duration slowEvery, long slowUntilEpochMillis) {
    long drawSeed = seed * 31 + relayName.hashCode() * 17L + ProcessHandle.current().pid();
    System.out.println(
        LOG_PREFIX + "started seed=" + seed + " relay=" + relayName + " draws_seed=" + drawSeed);
    return new PublisherFaults(
        inner,
        seed,
        new Random(drawSeed),
        PERMANENT_RATE,
        RETRYABLE_RATE,
        slowEvery,
        slowUntilEpochMillis <= 0
            ? Long.MAX_VALUE
            : System.nanoTime()
                + Duration.ofMillis(slowUntilEpochMillis - System.currentTimeMillis()).toNanos(),
        System::nanoTime,
        System.out);
  }

  /** What happens to one event: sent, answered by the decorator, or never answered. */
  private sealed interface Fate permits Send, Inject, Stall {}

  private record Send(int innerIndex) implements Fate {}

  private record Inject(PublishResult result) implements Fate {}

  private record Stall() implements Fate {}

  @Override
  public synchronized CompletionStage<List<PublishResult>> publish(List<OutboxMessage> batch) {
    Map<List<String>, List<Integer>> byAggregate = new LinkedHashMap<>();
    for (int i = 0; i < batch.size(); i++) {
      OutboxMessage m = batch.get(i);
      byAggregate
          .computeIfAbsent(List.of(m.aggregateType(), m.aggregateId()), k -> new ArrayList<>())
          .add(i);
    }
    long now = nanoClock.getAsLong();
    // No slow batches once the writers stop: the drain must settle every event (delivered or
    // dead-lettered), and a few retried events alone in small batches would otherwise be stalled
    // again and again, their backoff outgrowing the drain.
    // The first one of a relay process comes even after that: on a loaded machine relays that
    // are killed every few seconds may publish nothing until the writers stop, and a run without
    // a single slow batch would not test a publish timeout at all. One per process is bounded.
    boolean slow = now >= nextSlowAt && (now - slowUntilNanos < 0 || !slowedOnce);
    if (slow) {
      nextSlowAt = now + slowEveryNanos;
      slowedOnce = true;
    }
    int stallAggregate = slow ? random.nextInt(byAggregate.size()) : -1;
    @Nullable Fate[] fates = new Fate[batch.size()];
    int[][] aggregates = new int[byAggregate.size()][];
    List<OutboxMessage> toSend = new ArrayList<>();
    int a = 0;
    int stalled = 0;
    for (List<Integer> indices : byAggregate.values()) {
      aggregates[a] = indices.stream().mapToInt(Integer::intValue).toArray();
      int stallAt = -1;
      if (slow && (a == stallAggregate || random.nextInt(3) == 0)) {
        stallAt = random.nextInt(indices.size());
        stalled++;
      }
      boolean faulted = false;
      for (int k = 0; k < indices.size() && !faulted; k++) {
        int i = indices.get(k);
        OutboxMessage m = batch.get(i);
        if (k == stallAt) {
          fates[i] = new Stall();
          faulted = true;
          continue;
        }
        PublishResult injected = decide(m);
        if (injected != null) {
          fates[i] = new Inject(injected);
          faulted = true;
        } else {
          fates[i] = new Send(toSend.size());
          toSend.add(m);
        }
      }
      a++;
    }
    if (slow) {
      print("slow-batch events=" + batch.size() + " stalled_aggregates=" + stalled);
    }
    CompletionStage<List<PublishResult>> sent =
        toSend.isEmpty()
            ? CompletableFuture.completedFuture(List.of())
            : inner.publish(List.copyOf(toSend));
    return new Run(batch, fates, aggregates, sent, slow);
  }

  /** The injected answer for {@code m}, or null to send it. */
  private @Nullable PublishResult decide(OutboxMessage m) {
    if (m.eventType().equals(POISON_EVENT_TYPE)) {
      print("poison " + describe(m));
      return PublishResult.permanent(
          "unroutable: no route for event type " + POISON_EVENT_TYPE + " " + MARK);
    }
    if (m.attempt() == 1
        && Math.floorMod(m.position(), ABSURD_HINT_EVERY)
            == Math.floorMod(seed, ABSURD_HINT_EVERY)) {
      boolean maxSeconds = Math.floorDiv(m.position(), ABSURD_HINT_EVERY) % 2 == 0;
      Duration hint = maxSeconds ? Duration.ofSeconds(Long.MAX_VALUE) : Duration.ofDays(365L * 200);
      print("absurd-hint " + describe(m) + " hint=" + (maxSeconds ? "Long.MAX_VALUE s" : "200 y"));
      return PublishResult.retryable("broker busy, Retry-After " + hint + " " + MARK, hint);
    }
    double draw = random.nextDouble();
    if (draw < permanentRate) {
      print("permanent " + describe(m));
      return PublishResult.permanent("refused for good by the broker " + MARK);
    }
    if (draw < permanentRate + retryableRate) {
      Duration hint =
          switch (random.nextInt(3)) {
            case 0 -> null;
            case 1 -> Duration.ofMillis(500);
            default -> Duration.ofSeconds(2);
          };
      print("retryable " + describe(m) + " hint=" + hint);
      return PublishResult.retryable("broker busy " + MARK, hint);
    }
    return null;
  }

  private static String describe(OutboxMessage m) {
    return "event="
        + m.id()
        + " position="
        + m.position()
        + " aggregate="
        + m.aggregateId()
        + " attempt="
        + m.attempt();
  }

  private void print(String line) {
    log.println(LOG_PREFIX + "kind=" + line);
  }

  @Override
  public void close() {
    inner.close();
  }

  /**
   * One batch: the real publisher's answers for what was sent, merged with the injected ones, in
   * batch order. Shows its answers so far and cancels the real publisher's stage when cancelled.
   */
  final class Run extends CompletableFuture<List<PublishResult>> implements PartialResults {
    private final List<OutboxMessage> batch;
    private final @Nullable Fate[] fates;
    private final int[][] aggregates;
    private final CompletionStage<List<PublishResult>> sent;
    private final boolean slow;

    Run(
        List<OutboxMessage> batch,
        @Nullable Fate[] fates,
        int[][] aggregates,
        CompletionStage<List<PublishResult>> sent,
        boolean slow) {
      this.batch = batch;
      this.fates = fates;
      this.aggregates = aggregates;
      this.sent = sent;
      this.slow = slow;
      sent.whenComplete(
          (results, error) -> {
            List<@Nullable PublishResult> all;
            if (error != null || results == null) {
              all =
                  Collections.nCopies(
                      batch.size(),
                      PublishResult.retryable(
                          "publish failed: " + (error == null ? "no results" : error)));
            } else {
              all = new ArrayList<>(results);
            }
            List<@Nullable PublishResult> merged = merge(all);
            if (!merged.contains(null)) {
              List<PublishResult> done = new ArrayList<>(merged.size());
              merged.forEach(r -> done.add(requireNonNull(r)));
              complete(Collections.unmodifiableList(done));
            }
            // Else an event stalls: the batch waits for the relay's timeout and cancel.
          });
    }

    /** The answers so far, in batch order, null where none arrived (see the class comment). */
    @Override
    public List<@Nullable PublishResult> answeredSoFar() {
      return merge(sentSoFar());
    }

    private List<@Nullable PublishResult> sentSoFar() {
      CompletableFuture<List<PublishResult>> future = sent.toCompletableFuture();
      if (future.isDone() && !future.isCompletedExceptionally()) {
        return new ArrayList<>(future.join());
      }
      if (sent instanceof PartialResults partial) {
        return partial.answeredSoFar();
      }
      int sentCount = 0;
      for (Fate fate : fates) {
        if (fate instanceof Send) {
          sentCount++;
        }
      }
      return Collections.nCopies(sentCount, null);
    }

    private List<@Nullable PublishResult> merge(List<@Nullable PublishResult> fromInner) {
      @Nullable PublishResult[] merged = new PublishResult[batch.size()];
      for (int[] indices : aggregates) {
        @Nullable String failed = null;
        boolean waiting = false;
        for (int i : indices) {
          if (waiting) {
            continue; // behind an unanswered event: unanswered too
          }
          if (failed != null) {
            merged[i] = heldBack(batch.get(i), failed);
            continue;
          }
          Fate fate = fates[i];
          PublishResult r =
              switch (fate) {
                case Send s ->
                    s.innerIndex() < fromInner.size() ? fromInner.get(s.innerIndex()) : null;
                case Inject inject -> inject.result();
                case Stall stall -> null;
                case null -> null;
              };
          if (r == null) {
            waiting = true;
            continue;
          }
          merged[i] = r;
          if (!(r instanceof PublishResult.Published)) {
            failed = batch.get(i).id() + ": " + reasonOf(r);
          }
        }
      }
      return Arrays.asList(merged);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      List<@Nullable PublishResult> soFar = answeredSoFar();
      boolean cancelled = super.cancel(mayInterruptIfRunning);
      sent.toCompletableFuture().cancel(mayInterruptIfRunning);
      if (slow) {
        StringBuilder published = new StringBuilder();
        int answered = 0;
        for (int i = 0; i < soFar.size(); i++) {
          if (soFar.get(i) instanceof PublishResult.Published) {
            published.append(published.isEmpty() ? "" : ",");
            published.append(batch.get(i).id()).append(':').append(batch.get(i).attempt());
          }
          if (soFar.get(i) != null) {
            answered++;
          }
        }
        print(
            String.format(
                Locale.ROOT,
                "slow-batch-cancelled events=%d answered=%d published_before_timeout=%s",
                batch.size(),
                answered,
                published));
      }
      return cancelled;
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return new CompletableFuture<>();
    }
  }

  private static PublishResult heldBack(OutboxMessage m, String failed) {
    return PublishResult.retryable(
        "held back: an earlier event of aggregate "
            + m.aggregateType()
            + "/"
            + m.aggregateId()
            + " failed ("
            + failed
            + ")");
  }

  private static String reasonOf(PublishResult r) {
    return switch (r) {
      case PublishResult.Permanent p -> p.reason();
      case PublishResult.Retryable x -> x.reason();
      case PublishResult.Published p -> "published";
    };
  }
}
