/** The independent delivery check shared by the chaos run and the benchmark harness. */
@NullMarked
package dev.pgoutbox.example.verify;

import org.jspecify.annotations.NullMarked;
