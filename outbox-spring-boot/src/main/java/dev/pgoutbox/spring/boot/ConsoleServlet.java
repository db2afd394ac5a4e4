package dev.pgoutbox.spring.boot;

import dev.pgoutbox.console.ConsoleRequest;
import dev.pgoutbox.console.ConsoleResponse;
import dev.pgoutbox.console.OutboxConsole;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.InputStream;
import java.security.Principal;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The web console on a servlet container: turns each request into a {@link ConsoleRequest}, with
 * the caller's principal and, when Spring Security is present, whether the caller holds the write
 * role ({@link HttpServletRequest#isUserInRole}, which Spring Security answers).
 */
final class ConsoleServlet extends HttpServlet {

  private static final long serialVersionUID = 1L;

  private final transient OutboxConsole console;
  private final @Nullable String writeRole;

  /**
   * @param writeRole the role a write needs; null when no role is checked (no Spring Security)
   */
  ConsoleServlet(OutboxConsole console, @Nullable String writeRole) {
    this.console = console;
    this.writeRole = writeRole;
  }

  @Override
  protected void service(HttpServletRequest request, HttpServletResponse response)
      throws IOException {
    String pathInfo = request.getPathInfo();
    if (pathInfo == null) {
      // The page's links are relative: it must be served below the path, with a slash.
      response.setStatus(HttpServletResponse.SC_MOVED_PERMANENTLY);
      response.setHeader("Location", request.getRequestURI() + "/");
      return;
    }
    Map<String, String> headers = new HashMap<>();
    for (String name : Collections.list(request.getHeaderNames())) {
      headers.put(name, request.getHeader(name));
    }
    byte[] body;
    try (InputStream in = request.getInputStream()) {
      body = in.readNBytes(OutboxConsole.MAX_BODY_BYTES + 1);
    }
    Map<String, List<String>> query = new HashMap<>();
    ConsoleRequest.parseQuery(request.getQueryString()).forEach(query::put);
    Principal principal = request.getUserPrincipal();
    String caller = principal == null ? "anonymous" : principal.getName();
    String refusal = null;
    if (writeRole != null && !request.isUserInRole(writeRole)) {
      refusal =
          principal == null
              ? "a write needs a signed-in user with role " + writeRole
              : "user " + caller + " lacks role " + writeRole + " (pgoutbox.console.write-role)";
    }
    ConsoleResponse answer;
    try {
      answer =
          console.handle(
              new ConsoleRequest(
                  request.getMethod(), pathInfo, query, headers, body, caller, refusal));
    } catch (IllegalArgumentException e) {
      response.sendError(HttpServletResponse.SC_BAD_REQUEST, e.getMessage());
      return;
    }
    response.setStatus(answer.status());
    answer.headers().forEach(response::setHeader);
    response.setContentLength(answer.body().length);
    if (!request.getMethod().equals("HEAD")) {
      response.getOutputStream().write(answer.body());
    }
  }

  @Override
  public String toString() {
    return "ConsoleServlet[" + console + ", writeRole=" + writeRole + "]";
  }

  static List<String> mappings(String path) {
    return Arrays.asList(path, path + "/*");
  }
}
