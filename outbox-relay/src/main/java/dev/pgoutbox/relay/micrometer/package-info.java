/** Micrometer metrics for the relay ({@code micrometer-core} is an optional dependency). */
@NullMarked
package dev.pgoutbox.relay.micrometer;

import org.jspecify.annotations.NullMarked;
