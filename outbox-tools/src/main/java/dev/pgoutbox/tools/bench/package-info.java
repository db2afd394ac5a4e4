/**
 * The benchmark harness: {@code java -jar pgoutbox-tools.jar bench <scenario>}. Every scenario
 * verifies what it can (nothing lost, nothing reordered, duplicates counted), prints only figures
 * it measured (never a constant), and exits non-zero when a run lost or reordered anything.
 */
@NullMarked
package dev.pgoutbox.tools.bench;

import org.jspecify.annotations.NullMarked;
