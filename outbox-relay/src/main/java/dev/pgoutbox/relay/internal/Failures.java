package dev.pgoutbox.relay.internal;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/** The failure behind the wrappers a future adds, for the publishers and the sequencer. */
public final class Failures {

  private Failures() {}

  /**
   * {@code error} without its {@link CompletionException} and {@link ExecutionException} wrappers;
   * a wrapper without a cause is returned as it is.
   */
  public static Throwable unwrap(Throwable error) {
    Throwable e = error;
    while ((e instanceof CompletionException || e instanceof ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }
}
