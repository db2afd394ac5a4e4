/**
 * The benchmark harness: {@code java -jar pgoutbox-example.jar bench <scenario>}. Every scenario
 * verifies what it measured (nothing lost, nothing reordered, duplicates counted) and exits
 * non-zero when a run lost or reordered anything.
 */
@NullMarked
package dev.pgoutbox.example.bench;

import org.jspecify.annotations.NullMarked;
