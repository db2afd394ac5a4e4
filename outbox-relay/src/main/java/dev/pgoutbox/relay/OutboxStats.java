package dev.pgoutbox.relay;

import java.time.Duration;

/**
 * A snapshot of an outbox's backlog, read from the database.
 *
 * @param pending unprocessed events, dead letters excluded
 * @param oldestPendingAge age of the oldest pending event (the relay's lag); zero when none
 * @param deadLetters dead events not yet retried or discarded
 * @param blockedAggregates aggregates whose oldest unprocessed event is dead or backing off
 * @param oldestTransactionAge age of the oldest open transaction in the database, prepared ones
 *     (two-phase commit) included, which holds back vacuum of the outbox table; zero when none
 * @param table the table's live and dead rows, autovacuum runs and sizes
 */
public record OutboxStats(
    long pending,
    Duration oldestPendingAge,
    long deadLetters,
    long blockedAggregates,
    Duration oldestTransactionAge,
    OutboxTableStats table) {}
