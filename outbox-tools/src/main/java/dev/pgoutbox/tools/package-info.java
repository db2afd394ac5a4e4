/**
 * pgoutbox's operator tools: {@link dev.pgoutbox.tools.Main} with the {@code bench}, {@code relay}
 * and {@code chaos} commands. They use the library's public API only.
 */
@NullMarked
package dev.pgoutbox.tools;

import org.jspecify.annotations.NullMarked;
