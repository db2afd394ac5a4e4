/**
 * The operator API of an outbox: {@link dev.pgoutbox.admin.OutboxAdmin} reads its backlog, dead
 * letters, relay registry and status, retries and discards events, and runs retention. It reads the
 * stats the relays report through the same reader (pgoutbox-relay), and needs no relay running.
 */
@NullMarked
package dev.pgoutbox.admin;

import org.jspecify.annotations.NullMarked;
