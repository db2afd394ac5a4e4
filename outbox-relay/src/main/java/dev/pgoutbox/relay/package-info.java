/**
 * The pgoutbox relay: claims committed events from {@code outbox_events}, hands them to a {@link
 * dev.pgoutbox.relay.Publisher} in order per aggregate, and marks them published, retried with
 * backoff, or dead.
 */
@NullMarked
package dev.pgoutbox.relay;

import org.jspecify.annotations.NullMarked;
