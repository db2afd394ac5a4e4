package dev.pgoutbox.core;

import org.jspecify.annotations.Nullable;

/**
 * An event the outbox refuses before writing anything: a required field missing, blank or too long,
 * a payload that does not serialize or that PostgreSQL would not store unchanged, a bad header. The
 * message names the field and the rule, and for {@link Outbox#appendAll} the index of the event in
 * the list. The host's transaction is untouched: no statement was sent.
 */
public class InvalidEventException extends OutboxException {

  private static final long serialVersionUID = 1L;

  /** An exception whose message names the field and the rule it breaks. */
  public InvalidEventException(String message) {
    super(message);
  }

  /** An exception whose message names the field and the rule it breaks, and its cause. */
  public InvalidEventException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
