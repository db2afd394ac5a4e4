package dev.pgoutbox.admin;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import org.jspecify.annotations.Nullable;

/**
 * One relay instance in the outbox's registry ({@code outbox_relays}), as {@link
 * OutboxAdmin#relays()} reads it.
 *
 * @param instanceId the instance (several processes may share a relay name)
 * @param relayName the relay's name
 * @param source {@code TABLE} for an {@link OutboxRelay}, {@code WAL:<slot>} for a {@link
 *     WalRelay}; null for a relay of a library before schema version 8
 * @param ordering its {@link Ordering}
 * @param deadLetterPolicy its {@link DeadLetterPolicy}
 * @param startedAt when it registered
 * @param heartbeatAt its last heartbeat
 * @param heartbeatAge time since that heartbeat, by database time
 * @param alive whether the heartbeat is recent enough to count: a relay beats every 5 s, and a row
 *     whose last beat is older than 30 s belongs to a relay that crashed or lost the database
 */
public record RelayInstance(
    UUID instanceId,
    String relayName,
    @Nullable String source,
    String ordering,
    String deadLetterPolicy,
    Instant startedAt,
    Instant heartbeatAt,
    Duration heartbeatAge,
    boolean alive) {

  /** The slot a {@code WalRelay} reads, from {@link #source}; null for a table relay. */
  public @Nullable String walSlot() {
    return source != null && source.startsWith("WAL:") ? source.substring(4) : null;
  }
}
