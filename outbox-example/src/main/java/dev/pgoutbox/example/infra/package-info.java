/**
 * Real engines started inside the JVM, so the example runs with nothing installed: {@link
 * dev.pgoutbox.example.infra.EmbeddedPostgresServer} (a PostgreSQL server) and {@link
 * dev.pgoutbox.example.infra.EmbeddedKafkaBroker} (a single-node KRaft Kafka). The benchmark
 * harness reuses them.
 */
@NullMarked
package dev.pgoutbox.example.infra;

import org.jspecify.annotations.NullMarked;
