package dev.pgoutbox.console;

/** A request the console answers with an error status instead of data. */
final class BadRequest extends RuntimeException {
  private static final long serialVersionUID = 1L;
  final int status;
  final String code;

  BadRequest(int status, String code, String message) {
    super(message, null, false, false);
    this.status = status;
    this.code = code;
  }
}
