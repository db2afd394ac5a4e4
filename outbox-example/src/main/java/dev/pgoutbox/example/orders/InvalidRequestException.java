package dev.pgoutbox.example.orders;

import java.util.List;

/** A request refused before anything was written, with every bad field. */
public final class InvalidRequestException extends RuntimeException {

  private static final long serialVersionUID = 1L;

  private final transient List<FieldError> errors;

  /** An exception listing {@code errors} (at least one). */
  public InvalidRequestException(List<FieldError> errors) {
    super(describe(errors));
    this.errors = List.copyOf(errors);
  }

  /** The bad fields, in the order they were found. */
  public List<FieldError> errors() {
    return errors;
  }

  private static String describe(List<FieldError> errors) {
    StringBuilder b = new StringBuilder();
    for (FieldError e : errors) {
      if (!b.isEmpty()) {
        b.append("; ");
      }
      b.append(e.field()).append(' ').append(e.message());
    }
    return b.toString();
  }
}
