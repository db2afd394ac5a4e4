/**
 * What a host calls inside its own transaction: {@code Outbox} appends events in the same commit as
 * the business rows; {@code Inbox} makes a consumer's handling of each event take effect once.
 */
@NullMarked
package dev.pgoutbox.core;

import org.jspecify.annotations.NullMarked;
