/**
 * The WAL relay ({@link dev.pgoutbox.relay.wal.WalRelay}): the outbox's events in commit order from
 * a logical replication slot, over the relay's shared core (the publish call, recording outcomes,
 * backoff and parking, in {@code dev.pgoutbox.relay.internal}). Everything here but {@code
 * WalRelay} is internal: {@code ReplicationConnections} is public for the bench, {@code
 * ReplicationSocketFactory} because pgjdbc instantiates it by name.
 */
@NullMarked
package dev.pgoutbox.relay.wal;

import org.jspecify.annotations.NullMarked;
