/**
 * What a host calls inside its own transaction: {@link dev.pgoutbox.core.Outbox} appends {@link
 * dev.pgoutbox.core.OutboxEvent}s in the same commit as the business rows; {@link
 * dev.pgoutbox.core.Inbox} makes a consumer's handling of each event take effect once. Refused
 * input throws {@link dev.pgoutbox.core.InvalidEventException}, other failures {@link
 * dev.pgoutbox.core.OutboxException}.
 */
@NullMarked
package dev.pgoutbox.core;

import org.jspecify.annotations.NullMarked;
