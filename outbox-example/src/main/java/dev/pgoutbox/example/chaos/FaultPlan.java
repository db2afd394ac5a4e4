package dev.pgoutbox.example.chaos;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * The faults of a chaos run, fixed before it starts and printed: a random relay killed every {@code
 * killEvery} seconds (restarted a second later), and in every 120 s of the run one broker outage,
 * one PostgreSQL crash and one cut of the relays' network to PostgreSQL, spread so that they do not
 * overlap one another.
 */
record FaultPlan(long seed, List<Fault> faults) {

  /** Seconds a killed relay stays down before it is started again. */
  static final double RELAY_DOWN_SECONDS = 1.0;

  /** How long each block of the run with one fault of each big kind lasts. */
  static final int BLOCK_SECONDS = 120;

  enum Kind {
    RELAY_KILL,
    BROKER_OUTAGE,
    POSTGRES_CRASH,
    NETWORK_CUT,
    NETWORK_PARTITION
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

  static FaultPlan of(long seed, int seconds, int relays, int killEvery) {
    Random random = new Random(seed);
    List<Fault> faults = new ArrayList<>();
    for (int t = killEvery; t < seconds; t += killEvery) {
      faults.add(new Fault(Kind.RELAY_KILL, t, RELAY_DOWN_SECONDS, random.nextInt(relays)));
    }
    for (int block = 0; block * BLOCK_SECONDS < seconds; block++) {
      double start = block * BLOCK_SECONDS;
      double length = Math.min(BLOCK_SECONDS, seconds - start);
      if (length < 15) {
        break; // too short a tail for the big faults and their recovery
      }
      faults.add(
          new Fault(
              Kind.BROKER_OUTAGE, start + round(0.2 * length), clamp(0.08 * length, 3, 10), -1));
      faults.add(
          new Fault(
              Kind.POSTGRES_CRASH, start + round(0.45 * length), clamp(0.03 * length, 1, 4), -1));
      faults.add(
          new Fault(
              Kind.NETWORK_CUT, start + round(0.65 * length), clamp(0.06 * length, 2, 8), -1));
      faults.add(
          new Fault(
              Kind.NETWORK_PARTITION, start + round(0.8 * length), clamp(0.06 * length, 2, 8), -1));
    }
    faults.sort(Comparator.comparingDouble(Fault::at));
    return new FaultPlan(seed, List.copyOf(faults));
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
    };
  }

  private static double round(double seconds) {
    return Math.round(seconds * 10) / 10.0;
  }

  private static double clamp(double seconds, double min, double max) {
    return round(Math.max(min, Math.min(max, seconds)));
  }
}
