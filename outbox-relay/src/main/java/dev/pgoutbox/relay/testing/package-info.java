/**
 * Test doubles of the relay's SPI for hosts' tests: {@link
 * dev.pgoutbox.relay.testing.RecordingPublisher}. The rest of pgoutbox's test fixtures (a migrated
 * schema per test class, embedded engines, the delivery checker) are in {@code pgoutbox-testing}.
 */
@NullMarked
package dev.pgoutbox.relay.testing;

import org.jspecify.annotations.NullMarked;
