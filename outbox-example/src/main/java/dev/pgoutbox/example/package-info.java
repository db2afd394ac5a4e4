/**
 * The example's command line: {@link dev.pgoutbox.example.Main} with the {@code serve} and {@code
 * demo} commands.
 */
@NullMarked
package dev.pgoutbox.example;

import org.jspecify.annotations.NullMarked;
