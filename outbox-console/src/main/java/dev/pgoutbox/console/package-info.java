/**
 * The pgoutbox web console: one page (HTML, CSS and JavaScript modules shipped in this jar, no
 * external assets) and the JSON API it reads and writes through, a thin view of {@link
 * dev.pgoutbox.admin.OutboxAdmin}. {@link dev.pgoutbox.console.OutboxConsole} is framework-neutral:
 * a host (the Spring Boot starter, {@code admin serve}) turns its HTTP requests into {@link
 * dev.pgoutbox.console.ConsoleRequest}s and writes back the {@link
 * dev.pgoutbox.console.ConsoleResponse}s.
 */
@NullMarked
package dev.pgoutbox.console;

import org.jspecify.annotations.NullMarked;
