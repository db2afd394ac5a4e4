/**
 * The chaos run: {@code java -jar pgoutbox-tools.jar chaos}. Relay processes, writers, a broker and
 * an embedded PostgreSQL, faults on a printed schedule, and an independent checker of what reached
 * the broker.
 */
@NullMarked
package dev.pgoutbox.tools.chaos;

import org.jspecify.annotations.NullMarked;
