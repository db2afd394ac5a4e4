package dev.pgoutbox.console;

import static java.util.Objects.requireNonNull;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * One HTTP request to the console, as its host hands it over.
 *
 * <pre>{@code
 * ConsoleRequest request = new ConsoleRequest("GET", "api/overview",
 *     ConsoleRequest.parseQuery(rawQuery), headers, new byte[0], "alice", null);
 * }</pre>
 *
 * @param method the HTTP method, upper case
 * @param path the path below the console's mount point, without a leading slash ({@code ""} for the
 *     page, {@code "api/overview"}, {@code "console.js"})
 * @param query the decoded query parameters
 * @param headers the request headers (names are compared ignoring case; the first value of each)
 * @param body the request body (empty for a GET)
 * @param caller who asks, for the log of writes ({@code anonymous} when the host knows nobody)
 * @param writeRefusal why the host refuses this caller's writes (no token, lacks the role); null
 *     when the host lets this caller write (the console still refuses writes unless they are
 *     enabled, and cross-site requests)
 */
public record ConsoleRequest(
    String method,
    String path,
    Map<String, List<String>> query,
    Map<String, String> headers,
    byte[] body,
    String caller,
    @Nullable String writeRefusal) {

  /** Checks the values, upper-cases the method and lower-cases the header names. */
  public ConsoleRequest {
    method = requireNonNull(method, "method must not be null").toUpperCase(Locale.ROOT);
    requireNonNull(path, "path must not be null");
    path = path.startsWith("/") ? path.substring(1) : path;
    query = Map.copyOf(requireNonNull(query, "query must not be null"));
    Map<String, String> lower = new LinkedHashMap<>();
    requireNonNull(headers, "headers must not be null")
        .forEach((name, value) -> lower.putIfAbsent(name.toLowerCase(Locale.ROOT), value));
    headers = Map.copyOf(lower);
    requireNonNull(body, "body must not be null");
    caller = caller == null || caller.isBlank() ? "anonymous" : caller;
  }

  /** The first value of header {@code name} (any case); null if absent. */
  public @Nullable String header(String name) {
    return headers.get(name.toLowerCase(Locale.ROOT));
  }

  /** The first value of query parameter {@code name}; null if absent or empty. */
  public @Nullable String param(String name) {
    List<String> values = query.get(name);
    if (values == null || values.isEmpty() || values.get(0).isEmpty()) {
      return null;
    }
    return values.get(0);
  }

  /**
   * Decodes a raw query string ({@code a=1&b=x%20y}) as a form does: {@code +} is a space, names
   * and values are percent-decoded as UTF-8. Null or empty gives no parameters.
   */
  public static Map<String, List<String>> parseQuery(@Nullable String rawQuery) {
    Map<String, List<String>> parameters = new LinkedHashMap<>();
    if (rawQuery == null || rawQuery.isEmpty()) {
      return parameters;
    }
    for (String pair : rawQuery.split("&")) {
      if (pair.isEmpty()) {
        continue;
      }
      int eq = pair.indexOf('=');
      String name = decode(eq < 0 ? pair : pair.substring(0, eq));
      String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
      parameters.computeIfAbsent(name, n -> new ArrayList<>()).add(value);
    }
    return parameters;
  }

  private static String decode(String text) {
    try {
      return URLDecoder.decode(text, StandardCharsets.UTF_8);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("query is not percent-encoded correctly: " + text, e);
    }
  }

  @Override
  public String toString() {
    return "ConsoleRequest[" + method + " " + path + ", caller=" + caller + "]";
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
