package dev.pgoutbox.tools.admin;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.pgoutbox.admin.OutboxAdmin;
import dev.pgoutbox.console.ConsoleRequest;
import dev.pgoutbox.console.ConsoleResponse;
import dev.pgoutbox.console.OutboxConsole;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code admin serve}: the web console ({@link OutboxConsole}) on the JDK's HTTP server, bound to
 * 127.0.0.1 unless told. Read-only unless {@code --writes}; then every write needs the token,
 * generated and printed at start unless {@code --token} or {@value #TOKEN_VARIABLE} gives one.
 */
@Command(
    name = "serve",
    mixinStandardHelpOptions = true,
    description = {
      "Serves the web console: overview (live), dead letters, blocked aggregates, relays.",
      "Read-only unless --writes; then every write needs the token (printed at start, or given"
          + " with --token or the environment variable "
          + ServeCommand.TOKEN_VARIABLE
          + "). Runs until stopped (Ctrl-C)."
    })
final class ServeCommand extends AdminVerb {

  /** The environment variable read when {@code --token} is not given. */
  static final String TOKEN_VARIABLE = "PGOUTBOX_CONSOLE_TOKEN";

  /** The request header carrying the token. */
  static final String TOKEN_HEADER = "X-Pgoutbox-Token";

  /** Shortest token accepted: {@value} characters. */
  static final int MIN_TOKEN_LENGTH = 16;

  private static final Logger LOG = LoggerFactory.getLogger("pgoutbox-admin");

  @Option(
      names = "--port",
      paramLabel = "PORT",
      defaultValue = "8080",
      description = "TCP port, 0 for any free one (default: ${DEFAULT-VALUE})")
  int port = 8080;

  @Option(
      names = "--bind",
      paramLabel = "ADDRESS",
      defaultValue = "127.0.0.1",
      description =
          "Address to listen on (default: ${DEFAULT-VALUE}, this machine only; anything else"
              + " exposes the console to the network)")
  String bind = "127.0.0.1";

  @Option(
      names = "--writes",
      description = "Enable retry and discard (each needs the token); default read-only")
  boolean writes;

  @Option(
      names = "--show-payloads",
      description =
          "Show event payloads and header values (hidden by default: they may hold personal data"
              + " or credentials)")
  boolean showPayloads;

  @Option(
      names = "--token",
      paramLabel = "TOKEN",
      description =
          "The write token (at least 16 characters; default: "
              + TOKEN_VARIABLE
              + ", else a random one printed at start)")
  @Nullable String token;

  /** Counted down to stop the server (tests, the shutdown hook). */
  final CountDownLatch stopped = new CountDownLatch(1);

  /** The pool {@link #connections} made, closed when the server stops. */
  private @Nullable HikariDataSource pool;

  @Override
  DataSource connections(PGSimpleDataSource dataSource) {
    HikariConfig config = new HikariConfig();
    config.setDataSource(dataSource);
    config.setPoolName("pgoutbox-console");
    config.setMaximumPoolSize(4);
    config.setMinimumIdle(0);
    config.setInitializationFailTimeout(-1);
    pool = new HikariDataSource(config);
    return pool;
  }

  @Override
  int run(OutboxAdmin admin) {
    try {
      return serve(admin);
    } finally {
      if (pool != null) {
        pool.close();
      }
    }
  }

  private int serve(OutboxAdmin admin) {
    if (port < 0 || port > 65_535) {
      throw new AdminFailure("--port must be between 0 and 65535, was " + port);
    }
    InetAddress address;
    try {
      address = InetAddress.getByName(bind);
    } catch (UnknownHostException e) {
      throw new AdminFailure("--bind must be an address of this machine, was '" + bind + "'");
    }
    boolean generated = false;
    String writeToken = null;
    if (writes) {
      writeToken = token != null ? token : parent.environment.get(TOKEN_VARIABLE);
      if (writeToken == null || writeToken.isBlank()) {
        writeToken = newToken();
        generated = true;
      } else if (writeToken.length() < MIN_TOKEN_LENGTH) {
        throw new AdminFailure(
            "--token ("
                + TOKEN_VARIABLE
                + ") must be at least "
                + MIN_TOKEN_LENGTH
                + " characters, was "
                + writeToken.length());
      }
    }
    admin.checkAccess(writes);
    OutboxConsole console =
        OutboxConsole.builder(admin)
            .writesEnabled(writes)
            .showPayloads(showPayloads)
            .tokenPrompt(true)
            .build();
    byte[] expected = writeToken == null ? null : writeToken.getBytes(StandardCharsets.UTF_8);
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(address, port), 0);
    } catch (IOException e) {
      throw new AdminFailure("cannot listen on " + bind + ":" + port + ": " + e.getMessage());
    }
    server.createContext("/", exchange -> serve(console, expected, exchange));
    server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
    ScheduledExecutorService sampler =
        Executors.newSingleThreadScheduledExecutor(Thread.ofVirtual().factory());
    sampler.scheduleWithFixedDelay(
        () -> {
          try {
            console.sample();
          } catch (RuntimeException e) {
            LOG.warn("console sample failed: {}", e.getMessage());
          }
        },
        0,
        10,
        TimeUnit.SECONDS);
    server.start();
    Thread hook = new Thread(stopped::countDown, "pgoutbox-console-stop");
    Runtime.getRuntime().addShutdownHook(hook);
    String host = address.getHostAddress().contains(":") ? "[" + bind + "]" : bind;
    String url = "http://" + host + ":" + server.getAddress().getPort() + "/";
    PrintWriter out = out();
    out.printf(
        "pgoutbox console: schema %s on %s (%s, payloads %s)%n",
        admin.schema(),
        url,
        writes ? "writes enabled, each needs the token" : "read-only",
        showPayloads ? "shown" : "hidden");
    if (writes && generated) {
      out.println("Write token: " + writeToken);
      out.println("Open " + url + "#token=" + writeToken);
    } else if (writes) {
      out.println("Write token: the one given with --token or " + TOKEN_VARIABLE);
    }
    // The last line of the start: whatever reads the output knows the rest was printed before it.
    out.println("Serving " + url);
    if (!address.isLoopbackAddress()) {
      err()
          .println(
              "pgoutbox-admin: listening on "
                  + bind
                  + ", reachable from the network: put TLS and authentication in front of it");
    }
    out.flush();
    err().flush();
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      server.stop(1);
      sampler.shutdownNow();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException e) {
        // shutting down already
      }
    }
    return OK;
  }

  private static void serve(OutboxConsole console, byte @Nullable [] expected, HttpExchange ex)
      throws IOException {
    try (ex) {
      Map<String, String> headers = new HashMap<>();
      ex.getRequestHeaders().forEach((name, values) -> headers.put(name, values.getFirst()));
      byte[] body;
      try (InputStream in = ex.getRequestBody()) {
        body = in.readNBytes(OutboxConsole.MAX_BODY_BYTES + 1);
      }
      String given =
          headers.entrySet().stream()
              .filter(h -> h.getKey().equalsIgnoreCase(TOKEN_HEADER))
              .map(Map.Entry::getValue)
              .findFirst()
              .orElse(null);
      String remote = ex.getRemoteAddress().getAddress().getHostAddress();
      String refusal = null;
      String caller = "anonymous@" + remote;
      if (expected != null) {
        if (given == null || given.isEmpty()) {
          refusal =
              "a write needs the token admin serve printed at start: open the URL it printed, or"
                  + " paste the token in the page";
        } else if (!MessageDigest.isEqual(expected, given.getBytes(StandardCharsets.UTF_8))) {
          refusal = "the write token is wrong: use the one admin serve printed at start";
        } else {
          caller = "token-holder@" + remote;
        }
      }
      ConsoleResponse response;
      try {
        response =
            console.handle(
                new ConsoleRequest(
                    ex.getRequestMethod(),
                    ex.getRequestURI().getRawPath(),
                    ConsoleRequest.parseQuery(ex.getRequestURI().getRawQuery()),
                    headers,
                    body,
                    caller,
                    refusal));
      } catch (IllegalArgumentException e) {
        byte[] text = ("{\"error\":\"bad request\"}").getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(400, text.length);
        ex.getResponseBody().write(text);
        return;
      }
      response.headers().forEach((name, value) -> ex.getResponseHeaders().set(name, value));
      boolean head = ex.getRequestMethod().equals("HEAD");
      ex.sendResponseHeaders(response.status(), head ? -1 : response.body().length);
      if (!head) {
        try (OutputStream out = ex.getResponseBody()) {
          out.write(response.body());
        }
      }
    }
  }

  private static String newToken() {
    byte[] random = new byte[24];
    new SecureRandom().nextBytes(random);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(random);
  }
}
