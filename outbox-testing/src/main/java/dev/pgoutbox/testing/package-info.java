/**
 * pgoutbox's test fixtures, shared by every module's tests and offered to hosts for theirs.
 *
 * <ul>
 *   <li>{@link dev.pgoutbox.testing.TestSchema}: a JUnit 5 extension giving a test class its own
 *       migrated schema on a real PostgreSQL, resolved by {@link dev.pgoutbox.testing.TestDatabase}
 *       ({@code PGOUTBOX_TEST_JDBC_URL}, Testcontainers, or an embedded server);
 *   <li>{@link dev.pgoutbox.testing.Eventually}: polling with a deadline, never a fixed sleep;
 *   <li>{@link dev.pgoutbox.testing.DeliveryChecker}: the independent checker of what reached a
 *       consumer (nothing lost, nothing reordered per aggregate, duplicates counted);
 *   <li>real engines started from the JVM, for tests and for the runnable example and tools: {@link
 *       dev.pgoutbox.testing.EmbeddedPostgresServer}, {@link dev.pgoutbox.testing.EmbeddedKafka},
 *       {@link dev.pgoutbox.testing.NatsServer};
 *   <li>faults: {@link dev.pgoutbox.testing.TcpProxy} (cut and blackhole a network path) and {@link
 *       dev.pgoutbox.testing.Signals}.
 * </ul>
 *
 * A recording {@code Publisher} ships with the relay: {@code
 * dev.pgoutbox.relay.testing.RecordingPublisher}.
 */
@NullMarked
package dev.pgoutbox.testing;

import org.jspecify.annotations.NullMarked;
