package dev.pgoutbox.admin;

import dev.pgoutbox.relay.OutboxStats;
import dev.pgoutbox.relay.WalSlotStats;
import java.util.List;

/**
 * What an operator looks at first, read by {@link OutboxAdmin#status}: the backlog and table, the
 * relays, the WAL slots, the heads of blocked aggregates, and the problems found, each one
 * sentence. Healthy when there are no problems.
 *
 * @param stats pending, lag, dead letters, blocked aggregates, oldest transaction, table
 * @param relays every registered relay instance, live or expired
 * @param walSlots the replication slots the outbox's WAL relays read (named in the registry, and
 *     the default {@code pgoutbox_<schema>} if it exists)
 * @param blockedHeads the event at the head of each blocked aggregate (at most {@link
 *     OutboxAdmin#STATUS_BLOCKED_HEADS}), oldest first
 * @param problems why the outbox is degraded; empty when healthy
 */
public record OutboxStatus(
    OutboxStats stats,
    List<RelayInstance> relays,
    List<WalSlotStats> walSlots,
    List<StoredEvent> blockedHeads,
    List<String> problems) {

  /** Copies the lists. */
  public OutboxStatus {
    relays = List.copyOf(relays);
    walSlots = List.copyOf(walSlots);
    blockedHeads = List.copyOf(blockedHeads);
    problems = List.copyOf(problems);
  }

  /** Whether nothing needs an operator. */
  public boolean healthy() {
    return problems.isEmpty();
  }

  /** The relay instances whose heartbeat counts. */
  public long relaysAlive() {
    return relays.stream().filter(RelayInstance::alive).count();
  }
}
