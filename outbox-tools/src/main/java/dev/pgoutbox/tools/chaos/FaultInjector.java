package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.TcpProxy;
import dev.pgoutbox.tools.chaos.FaultPlan.Fault;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Carries out a {@link FaultPlan} on its own thread: each fault is done at its time and undone
 * {@code down} seconds later. Steps run one after another, so a slow step (a PostgreSQL restart)
 * delays the next ones; the log shows when each really happened. With WAL relays, a relay kill
 * kills the relay that streams the slot (the reader: its WAL sender ends with it), waiting up to
 * {@link #READER_WAIT}, but never past the time of another fault's next step (its own restart may
 * come late), for one to attach (after a start, a crash or a take-over); when none does, or the
 * reader is frozen, the planned relay.
 */
final class FaultInjector {

  private record Step(double at, Fault fault, boolean undo) {}

  /** How long a relay kill waits for a WAL reader to kill. */
  static final Duration READER_WAIT = Duration.ofSeconds(10);

  private final FaultPlan plan;
  private final RelayFleet relays;
  private final ChaosBroker broker;
  private final PostgresPair postgres;
  private final TcpProxy relayNetwork;
  private final PrintWriter log;
  private final DataSource database;
  private final AtomicInteger failures = new AtomicInteger();
  private final AtomicInteger frozenInTransaction = new AtomicInteger();
  private final AtomicInteger readerKills = new AtomicInteger();
  private final AtomicInteger fleetRestarts = new AtomicInteger();
  private final @Nullable String walSlot;
  private final Map<Fault, Integer> killed = new ConcurrentHashMap<>();
  private final Map<Fault, Long> fallBacksBefore = new ConcurrentHashMap<>();
  private final Set<Integer> frozen = ConcurrentHashMap.newKeySet();
  private Thread thread;

  FaultInjector(
      FaultPlan plan,
      RelayFleet relays,
      ChaosBroker broker,
      PostgresPair postgres,
      TcpProxy relayNetwork,
      DataSource database,
      @Nullable String walSlot,
      PrintWriter log) {
    this.plan = plan;
    this.walSlot = walSlot;
    this.relays = relays;
    this.broker = broker;
    this.postgres = postgres;
    this.relayNetwork = relayNetwork;
    this.database = database;
    this.log = log;
  }

  /** Starts carrying out the plan; time 0 is now. */
  void start() {
    List<Step> steps = new ArrayList<>();
    for (Fault fault : plan.faults()) {
      steps.add(new Step(fault.at(), fault, false));
      steps.add(new Step(fault.end(), fault, true));
    }
    steps.sort(Comparator.comparingDouble(Step::at));
    long zero = System.nanoTime();
    thread =
        Thread.ofPlatform()
            .name("chaos-faults")
            .start(
                () -> {
                  for (int i = 0; i < steps.size(); i++) {
                    Step step = steps.get(i);
                    long due = zero + (long) (step.at() * 1e9);
                    while (System.nanoTime() < due) {
                      LockSupport.parkNanos(due - System.nanoTime());
                    }
                    // The next step of another fault: a kill waiting for a reader may delay its
                    // own restart, never the rest of the schedule.
                    long nextDue = Long.MAX_VALUE;
                    for (int j = i + 1; j < steps.size(); j++) {
                      if (steps.get(j).fault() != step.fault()) {
                        nextDue = zero + (long) (steps.get(j).at() * 1e9);
                        break;
                      }
                    }
                    run(step, (System.nanoTime() - zero) / 1e9, nextDue);
                  }
                });
  }

  /** Waits until every fault has been done and undone. */
  void awaitDone() throws InterruptedException {
    thread.join();
  }

  /** Freezes that caught their relay inside a claim transaction (the zombie case). */
  int frozenInTransaction() {
    return frozenInTransaction.get();
  }

  /** The relay's sessions that sit idle inside a claim transaction (named by the relay). */
  private long openTransactions(int relay) throws SQLException {
    try (Connection connection = database.getConnection();
        PreparedStatement query =
            connection.prepareStatement(
                "select count(*) from pg_stat_activity"
                    + " where application_name = ? and state like 'idle in transaction%'")) {
      query.setString(1, "pgoutbox-relay-" + RelayFleet.name(relay));
      try (ResultSet rs = query.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }

  /** Relay kills that killed the WAL relays' active reader. */
  int readerKills() {
    return readerKills.get();
  }

  /**
   * The index of the relay streaming the WAL slot, or -1 (none, not WAL relays, or the database
   * does not answer: PostgreSQL may be down).
   */
  private int reader() {
    if (walSlot == null) {
      return -1;
    }
    try (Connection connection = database.getConnection();
        PreparedStatement query =
            connection.prepareStatement(
                "select a.application_name from pg_replication_slots s"
                    + " join pg_stat_activity a on a.pid = s.active_pid where s.slot_name = ?")) {
      query.setString(1, walSlot);
      try (ResultSet rs = query.executeQuery()) {
        if (rs.next()) {
          for (int i = 0; i < relays.size(); i++) {
            if (RelayFleet.name(i).equals(rs.getString(1))) {
              return i;
            }
          }
        }
        return -1;
      }
    } catch (SQLException e) {
      return -1;
    }
  }

  /** How long a slot fault may take to drop or invalidate the slot. */
  static final Duration SLOT_FAULT_WAIT = Duration.ofSeconds(60);

  /** As an operator: ends the WAL sender streaming the slot, then drops it, until it is gone. */
  private String dropSlot() throws SQLException {
    int tries = dropSlotUntilGone();
    return "WAL slot " + walSlot + " dropped by an operator (" + tries + " attempt(s))";
  }

  /**
   * Terminates the slot's WAL sender and drops the slot, again until it is gone (a standby relay
   * may attach in between); the number of attempts.
   */
  private int dropSlotUntilGone() throws SQLException {
    long deadline = System.nanoTime() + SLOT_FAULT_WAIT.toNanos();
    int tries = 0;
    while (true) {
      tries++;
      try (Connection connection = database.getConnection();
          PreparedStatement terminate =
              connection.prepareStatement(
                  "select pg_terminate_backend(active_pid) from pg_replication_slots"
                      + " where slot_name = ? and active_pid is not null");
          PreparedStatement drop =
              connection.prepareStatement(
                  "select pg_drop_replication_slot(slot_name) from pg_replication_slots"
                      + " where slot_name = ? and not active");
          PreparedStatement left =
              connection.prepareStatement(
                  "select count(*) from pg_replication_slots where slot_name = ?")) {
        terminate.setString(1, walSlot);
        terminate.execute();
        drop.setString(1, walSlot);
        try {
          drop.execute();
        } catch (SQLException e) {
          // A reader attached in between: terminate it again.
        }
        left.setString(1, walSlot);
        try (ResultSet rs = left.executeQuery()) {
          rs.next();
          if (rs.getLong(1) == 0) {
            return tries;
          }
        }
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException(
            "slot " + walSlot + " still there after " + tries + " attempts to drop it");
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
    }
  }

  /**
   * Makes the publication skip inserts for a second while the writers write, then restores it: the
   * slot never streams the events of that second, whatever is done to the publication later.
   */
  private String driftPublication() throws SQLException {
    try (Connection connection = database.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute("ALTER PUBLICATION " + walSlot + " SET (publish = 'update, delete')");
      LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(1));
      statement.execute("ALTER PUBLICATION " + walSlot + " SET (publish = 'insert')");
    }
    return "publication " + walSlot + " published no inserts for 1 s, then inserts again";
  }

  /**
   * Lets the slot keep no WAL ({@code max_slot_wal_keep_size} below a segment), then switches
   * segments and checkpoints until PostgreSQL invalidates it, and puts the setting back.
   */
  private String invalidateSlot() throws SQLException {
    int checkpoints = 0;
    try (Connection connection = database.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
      statement.execute("SELECT pg_reload_conf()");
      try {
        long deadline = System.nanoTime() + SLOT_FAULT_WAIT.toNanos();
        while (true) {
          try (ResultSet rs =
              statement.executeQuery(
                  "select wal_status from pg_replication_slots where slot_name = '"
                      + walSlot
                      + "'")) {
            if (!rs.next() || "lost".equals(rs.getString(1))) {
              break;
            }
          }
          if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException(
                "slot " + walSlot + " not invalidated after " + checkpoints + " checkpoints");
          }
          statement.execute(
              "select pg_logical_emit_message(false, 'pgoutbox-chaos', repeat('x', 1000))");
          statement.execute("select pg_switch_wal()");
          statement.execute("checkpoint");
          checkpoints++;
        }
      } finally {
        statement.execute("ALTER SYSTEM RESET max_slot_wal_keep_size");
        statement.execute("SELECT pg_reload_conf()");
      }
    }
    return "WAL slot "
        + walSlot
        + " invalidated (wal_status = lost) after "
        + checkpoints
        + " segment switch(es) and checkpoint(s)";
  }

  /**
   * Returns to WAL mode as docs/wal-relay.md tells an operator: every relay stopped (killed), the
   * slot dropped if it is left, and every relay started at once, so that they race to create the
   * new slot and park the backlog.
   */
  private String restartFleetOnANewSlot(long fallBacksBeforeTheFault) throws Exception {
    // As an operator would, on the alert: once a relay said it fell back (at most FALL_BACK_WAIT).
    long deadline = System.nanoTime() + FALL_BACK_WAIT.toNanos();
    long fellBack = relays.linesInLogs(WAL_FALL_BACK_LINE) - fallBacksBeforeTheFault;
    while (fellBack == 0 && System.nanoTime() - deadline < 0) {
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500)); // reads the relays' logs
      fellBack = relays.linesInLogs(WAL_FALL_BACK_LINE) - fallBacksBeforeTheFault;
    }
    relays.killAll();
    dropSlotUntilGone();
    relays.startAll();
    fleetRestarts.incrementAndGet();
    return "every relay killed ("
        + fellBack
        + " fall-back(s) logged since the fault), slot "
        + walSlot
        + " dropped, "
        + relays.size()
        + " relays started together on a new slot";
  }

  /** How long the fleet's restart after a slot fault waits for a relay to say it fell back. */
  static final Duration FALL_BACK_WAIT = Duration.ofSeconds(20);

  /** What a WAL relay logs when it falls back to the table. */
  static final String WAL_FALL_BACK_LINE = "WAL RELAY FALLING BACK TO THE TABLE RELAY";

  /** Restarts of the whole fleet on a new slot, after slot faults. */
  int fleetRestarts() {
    return fleetRestarts.get();
  }

  /** Steps that failed (logged): the run's faults were then not all as planned. */
  int failures() {
    return failures.get();
  }

  private void run(Step step, double now, long nextDueNanos) {
    Fault fault = step.fault();
    String what;
    try {
      what =
          switch (fault.kind()) {
            case RELAY_KILL -> {
              if (step.undo()) {
                int target = killed.getOrDefault(fault, fault.relay());
                relays.start(target);
                yield "started " + RelayFleet.name(target) + " again";
              }
              int reader = reader();
              long readerDeadline =
                  Math.min(System.nanoTime() + READER_WAIT.toNanos(), nextDueNanos);
              while (walSlot != null && reader < 0 && System.nanoTime() - readerDeadline < 0) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
                reader = reader();
              }
              boolean killReader = reader >= 0 && !frozen.contains(reader);
              int target = killReader ? reader : fault.relay();
              killed.put(fault, target);
              relays.kill(target);
              if (killReader) {
                readerKills.incrementAndGet();
                yield "SIGKILL " + RelayFleet.name(target) + " (the slot's reader)";
              }
              yield "SIGKILL " + RelayFleet.name(target);
            }
            case RELAY_FREEZE -> {
              if (step.undo()) {
                long open = openTransactions(fault.relay());
                relays.thaw(fault.relay());
                frozen.remove(fault.relay());
                yield "SIGCONT "
                    + RelayFleet.name(fault.relay())
                    + " (it wakes up; "
                    + (open == 0
                        ? "it holds no transaction any more"
                        : "it still holds " + open + " open transaction(s)")
                    + ")";
              }
              frozen.add(fault.relay());
              relays.freeze(fault.relay());
              LockSupport.parkNanos(TimeUnit.SECONDS.toNanos(2)); // long enough to be idle
              boolean holding = openTransactions(fault.relay()) > 0;
              if (holding) {
                frozenInTransaction.incrementAndGet();
              }
              yield "SIGSTOP "
                  + RelayFleet.name(fault.relay())
                  + (holding
                      ? ", frozen inside a claim transaction, its rows locked"
                      : ", frozen between batches");
            }
            case BROKER_OUTAGE -> {
              if (step.undo()) {
                broker.resume();
                yield "broker back";
              }
              broker.interrupt();
              yield broker.outage();
            }
            case POSTGRES_CRASH -> {
              if (step.undo()) {
                postgres.primary().restart();
                yield "PostgreSQL restarted (crash recovery done)";
              }
              postgres.primary().crash();
              yield "PostgreSQL killed";
            }
            case NETWORK_CUT -> {
              if (step.undo()) {
                relayNetwork.restore();
                yield "relays' network to PostgreSQL restored";
              }
              relayNetwork.cut();
              yield "relays' network to PostgreSQL cut";
            }
            case SLOT_DROP, PUBLICATION_DRIFT, SLOT_INVALIDATION, STANDBY_PROMOTION -> {
              if (step.undo()) {
                String standby =
                    fault.kind() == FaultPlan.Kind.STANDBY_PROMOTION
                        ? "new standby " + postgres.addStandby() + "; "
                        : "";
                yield standby + restartFleetOnANewSlot(fallBacksBefore.getOrDefault(fault, 0L));
              }
              fallBacksBefore.put(fault, relays.linesInLogs(WAL_FALL_BACK_LINE));
              yield switch (fault.kind()) {
                case SLOT_DROP -> dropSlot();
                case PUBLICATION_DRIFT -> driftPublication();
                case STANDBY_PROMOTION -> postgres.promote();
                default -> invalidateSlot();
              };
            }
            case NETWORK_PARTITION -> {
              if (step.undo()) {
                relayNetwork.restore();
                yield "relays' network to PostgreSQL healed (hung connections stay hung)";
              }
              relayNetwork.blackhole();
              yield "relays' network to PostgreSQL partitioned";
            }
          };
    } catch (Exception e) {
      failures.incrementAndGet();
      what = "FAILED to " + (step.undo() ? "undo " : "do ") + fault.kind() + ": " + e;
    }
    log.printf(Locale.ROOT, "chaos t=%.1f %s%n", now, what);
    log.flush();
  }
}
