package dev.pgoutbox.tools.chaos;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The faults of a chaos run, fixed before it starts and printed: a random relay killed every {@code
 * killEvery} seconds (restarted a second later); and in every 120 s of the run, never overlapping
 * one another: a broker outage, with a relay frozen (SIGSTOP) a second into it for longer than
 * PostgreSQL keeps its transaction (a zombie that wakes after others took its work over), a
 * PostgreSQL crash, a cut of the relays' network to PostgreSQL (connections closed) and a partition
 * of it (bytes dropped, connections hang). With WAL relays, each block also ends with one fault of
 * the slot, in turn (where the turn starts depends on the seed): the slot dropped by an operator,
 * the publication altered not to publish inserts for a second (publication drift), or the slot
 * invalidated by {@code max_slot_wal_keep_size}; the relays fall back to the table, and the fault
 * is undone as an operator would: every relay stopped, the slot dropped, and all started together
 * on a new slot (concurrent first starts). No relay is killed from just before such a fault until
 * its undo.
 */
record FaultPlan(long seed, List<Fault> faults) {

  /** Seconds a killed relay stays down before it is started again. */
  static final double RELAY_DOWN_SECONDS = 1.0;

  /** How long each block of the run with one fault of each big kind lasts. */
  static final int BLOCK_SECONDS = 120;

  enum Kind {
    RELAY_KILL,
    RELAY_FREEZE,
    BROKER_OUTAGE,
    POSTGRES_CRASH,
    NETWORK_CUT,
    NETWORK_PARTITION,
    SLOT_DROP,
    PUBLICATION_DRIFT,
    SLOT_INVALIDATION,
    STANDBY_PROMOTION
  }

  /** The faults of the WAL slot, one per block in this turn. */
  static final List<Kind> SLOT_FAULTS =
      List.of(
          Kind.SLOT_DROP, Kind.PUBLICATION_DRIFT, Kind.SLOT_INVALIDATION, Kind.STANDBY_PROMOTION);

  /** Whether {@code kind} is one of {@link #SLOT_FAULTS}. */
  static boolean isSlotFault(Kind kind) {
    return SLOT_FAULTS.contains(kind);
  }

  /**
   * One fault: starts {@code at} seconds after the writers start, is undone {@code down} seconds
   * later; {@code relay} is the killed relay's index (RELAY_KILL only).
   */
  record Fault(Kind kind, double at, double down, int relay) {
    double end() {
      return at + down;
    }
  }

  /**
   * The plan for a run of {@code seconds} with {@code relays} relays. {@code freezeSeconds} (0: no
   * freeze) is how long a relay is frozen with SIGSTOP in each block when there are at least two
   * relays; the run makes it longer than the relays' idle-transaction timeout, so PostgreSQL ends
   * the frozen relay's transaction and other relays take its aggregates over before it wakes.
   */
  static FaultPlan of(long seed, int seconds, int relays, int killEvery, double freezeSeconds) {
    return of(seed, seconds, relays, killEvery, freezeSeconds, false);
  }

  /**
   * As {@link #of(long, int, int, int, double)}; with {@code wal}, a fault of the slot ends each
   * block ({@link #SLOT_FAULTS}).
   */
  static FaultPlan of(
      long seed, int seconds, int relays, int killEvery, double freezeSeconds, boolean wal) {
    Random random = new Random(seed);
    List<Fault> outages = new ArrayList<>();
    List<Fault> freezes = new ArrayList<>();
    List<Fault> slotFaults = new ArrayList<>();
    for (int block = 0; block * BLOCK_SECONDS < seconds; block++) {
      double start = block * BLOCK_SECONDS;
      double length = Math.min(BLOCK_SECONDS, seconds - start);
      if (length < 15) {
        break; // too short a tail for the big faults and their recovery
      }
      Fault broker =
          new Fault(
              Kind.BROKER_OUTAGE, start + round(0.1 * length), clamp(0.08 * length, 3, 10), -1);
      outages.add(broker);
      // Frozen a second into the broker outage, a relay is most likely inside a batch, waiting
      // for the broker with its rows locked: the zombie case. It wakes before the crash.
      double freezeAt = broker.at() + 1;
      if (relays > 1 && freezeSeconds > 0 && freezeAt + freezeSeconds <= start + 0.5 * length - 1) {
        freezes.add(new Fault(Kind.RELAY_FREEZE, freezeAt, freezeSeconds, random.nextInt(relays)));
      }
      outages.add(
          new Fault(
              Kind.POSTGRES_CRASH, start + round(0.5 * length), clamp(0.03 * length, 1, 4), -1));
      outages.add(
          new Fault(
              Kind.NETWORK_CUT, start + round(0.65 * length), clamp(0.06 * length, 2, 8), -1));
      outages.add(
          new Fault(
              Kind.NETWORK_PARTITION, start + round(0.8 * length), clamp(0.06 * length, 2, 8), -1));
      if (wal) {
        Kind kind = SLOT_FAULTS.get((int) Math.floorMod(seed + block, (long) SLOT_FAULTS.size()));
        slotFaults.add(
            new Fault(kind, start + round(0.9 * length), clamp(0.03 * length, 1, 3), -1));
      }
    }
    List<Fault> faults = new ArrayList<>(outages);
    faults.addAll(freezes);
    faults.addAll(slotFaults);
    for (int t = killEvery; t < seconds; t += killEvery) {
      if (nearSlotFault(t, slotFaults)) {
        continue; // a relay started alone while the others fell back would read a new slot
      }
      faults.add(
          new Fault(Kind.RELAY_KILL, t, RELAY_DOWN_SECONDS, killable(t, relays, freezes, random)));
    }
    faults.sort(Comparator.comparingDouble(Fault::at));
    return new FaultPlan(seed, List.copyOf(faults));
  }

  /**
   * Whether a relay kill at {@code t} (and its restart a moment later) would come near a slot
   * fault: from a second before it until a second after the fleet's restart.
   */
  private static boolean nearSlotFault(double t, List<Fault> slotFaults) {
    for (Fault fault : slotFaults) {
      if (t + RELAY_DOWN_SECONDS >= fault.at() - 1 && t <= fault.end() + 1) {
        return true;
      }
    }
    return false;
  }

  /** A random relay that is not frozen at {@code t}: the freeze must end in a thaw, not a kill. */
  private static int killable(double t, int relays, List<Fault> freezes, Random random) {
    int relay = random.nextInt(relays);
    for (Fault freeze : freezes) {
      if (freeze.relay() == relay && t >= freeze.at() - RELAY_DOWN_SECONDS && t <= freeze.end()) {
        relay = (relay + 1 + random.nextInt(relays - 1)) % relays;
      }
    }
    return relay;
  }

  long count(Kind kind) {
    return faults.stream().filter(f -> f.kind() == kind).count();
  }

  void print(PrintWriter out, ChaosBroker broker) {
    out.printf(Locale.ROOT, "fault schedule (seconds after the writers start; seed %d):%n", seed);
    for (Fault f : faults) {
      out.printf(Locale.ROOT, "  t=%-6.1f %s%n", f.at(), describe(f, broker));
    }
  }

  static String describe(Fault f, ChaosBroker broker) {
    String back = String.format(Locale.ROOT, "%.1f", f.end());
    return switch (f.kind()) {
      case RELAY_KILL -> "SIGKILL " + RelayFleet.name(f.relay()) + ", started again at t=" + back;
      case RELAY_FREEZE ->
          "SIGSTOP "
              + RelayFleet.name(f.relay())
              + " (frozen in the middle of whatever it does), SIGCONT at t="
              + back;
      case BROKER_OUTAGE -> broker.outage() + ", back at t=" + back;
      case POSTGRES_CRASH ->
          "PostgreSQL killed (SIGKILL to the postmaster and every backend), restarted at t=" + back;
      case NETWORK_CUT ->
          "network between the relays and PostgreSQL cut (TCP proxy closes and refuses"
              + " connections), restored at t="
              + back;
      case NETWORK_PARTITION ->
          "network between the relays and PostgreSQL partitioned (TCP proxy drops every byte;"
              + " open connections hang for good), healed at t="
              + back;
      case SLOT_DROP ->
          "WAL slot dropped by an operator (its WAL sender terminated first); at t="
              + back
              + " "
              + FLEET_RESTART;
      case PUBLICATION_DRIFT ->
          "publication altered to publish = 'update, delete' for a second (inserts written"
              + " meanwhile are skipped by the slot), then back to 'insert'; at t="
              + back
              + " "
              + FLEET_RESTART;
      case STANDBY_PROMOTION ->
          "PostgreSQL primary killed once its standby (made synchronous) has every acknowledged"
              + " commit, the standby promoted, the relays' and writers' addresses moved to it (the"
              + " new primary has no logical slot); at t="
              + back
              + " a new standby cloned, and "
              + FLEET_RESTART;
      case SLOT_INVALIDATION ->
          "WAL slot invalidated (max_slot_wal_keep_size = 1MB, segments switched and checkpoints"
              + " until wal_status = lost, then reset); at t="
              + back
              + " "
              + FLEET_RESTART;
    };
  }

  /** How a slot fault is undone, as an operator returns to WAL mode. */
  static final String FLEET_RESTART =
      "every relay killed, the slot dropped if left, all relays started together on a new slot"
          + " (concurrent first starts)";

  private static double round(double seconds) {
    return Math.round(seconds * 10) / 10.0;
  }

  private static double clamp(double seconds, double min, double max) {
    return round(Math.max(min, Math.min(max, seconds)));
  }
}
