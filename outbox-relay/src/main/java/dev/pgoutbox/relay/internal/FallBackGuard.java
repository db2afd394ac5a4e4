package dev.pgoutbox.relay.internal;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Asked at the start of each claim transaction while a {@link BatchRunner} claims every pending row
 * for a WAL relay that fell back: another instance may create a new slot meanwhile, whose reader
 * publishes the rows that are not parked.
 */
public interface FallBackGuard {

  /** What a fallen-back WAL relay's drainer may claim in one transaction. */
  enum Decision {
    /** Every pending row (no new slot, none being created). */
    CLAIM_ALL,
    /** Nothing this time (another instance is creating the slot). */
    CLAIM_NOTHING,
    /** Parked rows only, from now on (a new slot exists). */
    PARKED_ONLY
  }

  /** Decides in the claim's transaction (and may take locks held until it ends). */
  Decision decide(Connection connection) throws SQLException;

  /** Called once on {@link Decision#PARKED_ONLY}, on the runner's thread, before the claim. */
  void resumed();
}
