/**
 * Publishes outbox events as HTTP webhooks with the JDK's {@link java.net.http.HttpClient}: {@link
 * dev.pgoutbox.relay.webhook.WebhookPublisher} on the relay's side, {@link
 * dev.pgoutbox.core.consumer.WebhookEventIds} and {@link
 * dev.pgoutbox.core.consumer.StandardWebhooks} on the receiver's side (in {@code pgoutbox-core}).
 * Needs no dependency beyond the JDK.
 */
@NullMarked
package dev.pgoutbox.relay.webhook;

import org.jspecify.annotations.NullMarked;
