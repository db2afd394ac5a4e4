package dev.pgoutbox.tools.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;

/**
 * How much time the JIT compilers of this JVM have spent compiling, so the bench can tell when a
 * warm-up is done and show how much of the two cores the compilers took from a measured run.
 */
final class JitActivity {

  private static final CompilationMXBean COMPILER = ManagementFactory.getCompilationMXBean();

  private JitActivity() {}

  /**
   * Milliseconds spent compiling since the JVM started, summed over compiler threads; -1 if
   * unknown.
   */
  static long compileMillis() {
    return COMPILER != null && COMPILER.isCompilationTimeMonitoringSupported()
        ? COMPILER.getTotalCompilationTime()
        : -1;
  }
}
