package dev.pgoutbox.relay.testing;

import dev.pgoutbox.relay.RelayListener;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** A relay listener that keeps every database error the relay reports, for a test to check. */
public final class DatabaseErrors implements RelayListener {

  private final List<Exception> errors = new CopyOnWriteArrayList<>();

  @Override
  public void onDatabaseError(Exception error, Duration backoff) {
    errors.add(error);
  }

  /** The errors reported so far, oldest first (a live view). */
  public List<Exception> errors() {
    return errors;
  }
}
