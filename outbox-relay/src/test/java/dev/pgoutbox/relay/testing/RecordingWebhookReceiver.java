package dev.pgoutbox.relay.testing;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.IntSupplier;
import org.jspecify.annotations.Nullable;

/**
 * A webhook endpoint on the loopback interface for tests: answers each request to {@code /events}
 * with the status the test chooses and records its headers, in the order they arrived. Closing it
 * stops the server.
 */
public final class RecordingWebhookReceiver implements AutoCloseable {

  private final ConcurrentLinkedQueue<Headers> received = new ConcurrentLinkedQueue<>();
  private final HttpServer server;

  private RecordingWebhookReceiver(IntSupplier status) throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/events",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          received.add(exchange.getRequestHeaders());
          exchange.sendResponseHeaders(status.getAsInt(), -1);
          exchange.close();
        });
    server.start();
  }

  /** Starts a receiver that answers each request with the next status {@code status} gives. */
  public static RecordingWebhookReceiver answering(IntSupplier status) throws IOException {
    return new RecordingWebhookReceiver(status);
  }

  /** The port the receiver listens on. */
  public int port() {
    return server.getAddress().getPort();
  }

  /** The URL a webhook publisher posts to, to reach this receiver. */
  public URI endpoint() {
    return URI.create("http://127.0.0.1:" + port() + "/events");
  }

  /** The headers of the requests received so far, first received first. */
  public List<Headers> requests() {
    return List.copyOf(received);
  }

  /** The headers of the first request received, or null before any. */
  public @Nullable Headers firstRequest() {
    return received.peek();
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
