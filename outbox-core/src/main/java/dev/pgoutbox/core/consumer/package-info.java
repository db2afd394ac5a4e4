/**
 * The consumer's side of each publisher, with no relay needed: reading the event id back for the
 * {@link dev.pgoutbox.core.Inbox} ({@link dev.pgoutbox.core.consumer.KafkaEventIds}, {@link
 * dev.pgoutbox.core.consumer.RabbitMqEventIds}, {@link dev.pgoutbox.core.consumer.NatsEventIds},
 * {@link dev.pgoutbox.core.consumer.WebhookEventIds}) and checking a webhook's signature ({@link
 * dev.pgoutbox.core.consumer.WebhookSignature}). The broker clients are optional dependencies of
 * this module: a consumer declares the one it already uses; the webhook helpers need none.
 */
@NullMarked
package dev.pgoutbox.core.consumer;

import org.jspecify.annotations.NullMarked;
