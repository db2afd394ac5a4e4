package dev.pgoutbox.tools.chaos;

import dev.pgoutbox.testing.DeliveryChecker;
import java.util.List;

/**
 * The broker of a chaos run: what the relay processes publish to, what the checker consumes from,
 * and how an outage is made.
 */
interface ChaosBroker extends AutoCloseable {

  /** For the report, e.g. {@code kafka (embedded)}. */
  String describe();

  /** The broker options of the {@code relay} command. */
  List<String> relayArguments();

  /**
   * Starts the independent consumer, feeding {@code checker} in the broker's order; the feed says
   * at the end whether it read everything the broker holds.
   */
  CheckerFeed consume(DeliveryChecker checker) throws Exception;

  /** What {@link #interrupt()} does, for the printed schedule. */
  String outage();

  /** Starts an outage: the relays lose the broker. */
  void interrupt() throws Exception;

  /** Ends the outage. */
  void resume() throws Exception;

  @Override
  void close();
}
