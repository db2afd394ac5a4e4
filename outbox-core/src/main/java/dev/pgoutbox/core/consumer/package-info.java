/**
 * The consumer's side of each publisher, with no relay needed: reading the event id back for the
 * {@link dev.pgoutbox.core.Inbox} ({@link dev.pgoutbox.core.consumer.KafkaEventIds}, {@link
 * dev.pgoutbox.core.consumer.RabbitMqEventIds}, {@link dev.pgoutbox.core.consumer.NatsEventIds},
 * {@link dev.pgoutbox.core.consumer.WebhookEventIds}), reading the producer's OpenTelemetry trace
 * context back so the handler runs in the request's trace ({@link
 * dev.pgoutbox.core.consumer.KafkaTraceContext}, {@link
 * dev.pgoutbox.core.consumer.RabbitMqTraceContext}, {@link
 * dev.pgoutbox.core.consumer.NatsTraceContext}, {@link
 * dev.pgoutbox.core.consumer.WebhookTraceContext}), reading the CloudEvents envelope ({@link
 * dev.pgoutbox.core.consumer.CloudEvent} through {@code KafkaCloudEvents}, {@code
 * RabbitMqCloudEvents}, {@code NatsCloudEvents}, {@code WebhookCloudEvents}), and checking a
 * webhook's signature ({@link dev.pgoutbox.core.consumer.WebhookSignature}, {@link
 * dev.pgoutbox.core.consumer.StandardWebhooks}), and reading pgoutbox's own headers whatever they
 * hold ({@link dev.pgoutbox.core.consumer.NatsHeaders}, {@link
 * dev.pgoutbox.core.consumer.WebhookHeaders}). The broker clients and OpenTelemetry are optional
 * dependencies of this module: a consumer declares the ones it already uses; the webhook id,
 * signature and CloudEvents helpers need none.
 */
@NullMarked
package dev.pgoutbox.core.consumer;

import org.jspecify.annotations.NullMarked;
