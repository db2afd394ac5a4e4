package dev.pgoutbox.console;

import static java.util.Objects.requireNonNull;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * What the console answers: the host writes the status, every header and the body as they are.
 *
 * @param status the HTTP status
 * @param headers the response headers, {@code Content-Type} and the security headers included
 * @param body the body
 */
public record ConsoleResponse(int status, Map<String, String> headers, byte[] body) {

  /** Copies the headers. */
  public ConsoleResponse {
    headers = Map.copyOf(requireNonNull(headers, "headers must not be null"));
    requireNonNull(body, "body must not be null");
  }

  /** The body as UTF-8 text. */
  public String text() {
    return new String(body, StandardCharsets.UTF_8);
  }

  @Override
  public String toString() {
    return "ConsoleResponse[" + status + ", " + headers.get("Content-Type") + "]";
  }

  @Override
  public boolean equals(Object other) {
    return this == other;
  }

  @Override
  public int hashCode() {
    return System.identityHashCode(this);
  }
}
