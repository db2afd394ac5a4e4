package dev.pgoutbox.admin;

import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.WalSlotStats;
import dev.pgoutbox.relay.internal.FleetRegistry;
import dev.pgoutbox.relay.internal.WalSlotQuery;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;

/**
 * {@link OutboxAdmin#status(Duration, Duration)}: reads what an operator checks first through the
 * admin and states each problem found in a sentence that says what to do.
 */
final class StatusReport {

  private final OutboxAdmin admin;

  StatusReport(OutboxAdmin admin) {
    this.admin = admin;
  }

  OutboxStatus read(Duration maxPendingAge, Duration maxTransactionAge) {
    OutboxStats stats = admin.stats();
    List<RelayInstance> relays = admin.relays();
    List<WalSlotStats> slots = new ArrayList<>();
    List<String> missingSlots = new ArrayList<>();
    for (String slotName : slotNames(relays)) {
      Optional<WalSlotStats> slot = admin.walSlot(slotName);
      if (slot.isPresent()) {
        slots.add(slot.get());
      } else if (relays.stream().anyMatch(r -> r.alive() && slotName.equals(r.walSlot()))) {
        missingSlots.add(slotName);
      }
    }
    List<StoredEvent> heads =
        stats.blockedAggregates() == 0
            ? List.of()
            : admin.blockedAggregateHeads(OutboxAdmin.STATUS_BLOCKED_HEADS);
    List<String> problems = new ArrayList<>();
    if (stats.deadLetters() > 0) {
      problems.add(
          stats.deadLetters()
              + " dead letter(s): their aggregates may be held back; retry or discard them");
    }
    relayProblems(relays, problems);
    ageProblems(stats, maxPendingAge, maxTransactionAge, problems);
    slotProblems(slots, missingSlots, problems);
    return new OutboxStatus(stats, relays, slots, heads, problems);
  }

  /** The slots registered relays read, and the default one of this schema. */
  private LinkedHashSet<String> slotNames(List<RelayInstance> relays) {
    LinkedHashSet<String> slotNames = new LinkedHashSet<>();
    for (RelayInstance relay : relays) {
      if (relay.walSlot() != null) {
        slotNames.add(relay.walSlot());
      }
    }
    slotNames.add(WalSlotQuery.defaultName(admin.schema()));
    return slotNames;
  }

  private static void ageProblems(
      OutboxStats stats,
      Duration maxPendingAge,
      Duration maxTransactionAge,
      List<String> problems) {
    if (stats.oldestPendingAge().compareTo(maxPendingAge) > 0) {
      problems.add(
          "the oldest pending event is "
              + stats.oldestPendingAge().toSeconds()
              + " s old, above "
              + maxPendingAge.toSeconds()
              + " s: the relays fall behind or are held back");
    }
    if (stats.oldestTransactionAge().compareTo(maxTransactionAge) > 0) {
      problems.add(
          "a transaction has been open for "
              + stats.oldestTransactionAge().toSeconds()
              + " s, above "
              + maxTransactionAge.toSeconds()
              + " s: it holds back vacuum of outbox_events");
    }
  }

  private static void relayProblems(List<RelayInstance> relays, List<String> problems) {
    if (relays.stream().noneMatch(RelayInstance::alive)) {
      problems.add(
          "no relay is alive (none registered with a heartbeat in the last "
              + FleetRegistry.EXPIRES_AFTER.toSeconds()
              + " s): nothing publishes");
    }
    for (RelayInstance relay : relays) {
      if (!relay.alive()) {
        problems.add(
            "relay '"
                + relay.relayName()
                + "' (instance "
                + relay.instanceId()
                + ") last beat "
                + relay.heartbeatAge().toSeconds()
                + " s ago: it crashed or lost the database");
      }
    }
  }

  private static void slotProblems(
      List<WalSlotStats> slots, List<String> missingSlots, List<String> problems) {
    for (WalSlotStats slot : slots) {
      if (slot.lost()) {
        problems.add(
            "replication slot "
                + slot.slotName()
                + " is lost (wal_status=lost): the WAL relay cannot stream; see docs/wal-relay.md");
      } else if (!slot.active()) {
        problems.add(
            "replication slot "
                + slot.slotName()
                + " has no reader: PostgreSQL keeps its WAL ("
                + slot.lagBytes()
                + " bytes behind)");
      }
    }
    for (String slotName : missingSlots) {
      problems.add(
          "replication slot "
              + slotName
              + ", which live WAL relays read, does not exist (dropped by hand or after"
              + " publication drift, or lost in a fail-over to a standby; or a first start is"
              + " creating it): the WAL relays publish from the table until every instance is"
              + " restarted; see docs/wal-relay.md");
    }
  }
}
