package dev.pgoutbox.core;

import org.jspecify.annotations.Nullable;

/**
 * The root of every exception pgoutbox throws on purpose. SQL and broker exceptions are wrapped in
 * it with context (event id, aggregate, field), never swallowed.
 */
public class OutboxException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  /** An exception with a message that says what failed and why. */
  public OutboxException(String message) {
    super(message);
  }

  /** An exception with a message that says what failed, and its cause. */
  public OutboxException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
