package dev.pgoutbox.relay.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.pgoutbox.relay.OutboxMessage;
import dev.pgoutbox.relay.PublishResult;
import dev.pgoutbox.relay.brokers.TestEvents;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link WebhookPublisher} against receivers that try to take the relay down, each a raw socket
 * this test controls: an endless body, a body trickled one byte a second, an endless header block.
 * Each ends in bounded time as that event's retryable failure, having read a bounded number of
 * bytes, while an event of another aggregate in the same batch, sent to a sane receiver, is
 * published.
 */
class HostileWebhookReceiverIT {

  static final Duration TIMEOUT = Duration.ofSeconds(1);

  /** Past the timeout, for scheduling and a loaded machine; the old code took 20 s and more. */
  static final Duration MARGIN = Duration.ofSeconds(3);

  /** What the receiver may have pushed into the client: the cap, socket buffers, slack. */
  static final long MAX_BYTES_SENT = 16L << 20;

  /** What a hostile receiver writes at most, so that a failing test does not fill the heap. */
  static final long RECEIVER_CAP = 512L << 20;

  /** How a hostile connection answers, after reading the request. */
  interface Behaviour {
    void answer(OutputStream out, AtomicLong written) throws IOException, InterruptedException;
  }

  ServerSocket hostile;
  HttpServer sane;
  final Map<String, Behaviour> behaviours = new ConcurrentHashMap<>();
  final Map<String, AtomicLong> written = new ConcurrentHashMap<>();
  final Map<String, CountDownLatch> ended = new ConcurrentHashMap<>();
  final AtomicInteger saneRequests = new AtomicInteger();

  @BeforeEach
  void startReceivers() throws IOException {
    hostile = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread.ofVirtual().name("hostile-accept").start(this::acceptHostile);
    sane = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    sane.createContext(
        "/events",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          saneRequests.incrementAndGet();
          exchange.sendResponseHeaders(204, -1);
          exchange.close();
        });
    sane.start();
  }

  @AfterEach
  void stopReceivers() throws IOException {
    hostile.close();
    sane.stop(0);
  }

  @Test
  void anEndlessBodyIsCutAtTheCapAndTheStatusStillCounts() throws Exception {
    behaviours.put("endless-503", endlessBody("503 Service Unavailable"));
    behaviours.put("endless-200", endlessBody("200 OK"));
    List<PublishResult> results =
        publishWithDeadline(
            List.of(event("endless-503"), event("endless-200"), event("sane")), Duration.ZERO);

    assertThat(results.get(0))
        .isInstanceOfSatisfying(
            PublishResult.Retryable.class,
            r ->
                assertThat(r.reason())
                    .contains("answered HTTP 503: xxxx")
                    .hasSizeLessThan(300)
                    .doesNotContain("timed out"));
    assertThat(results.get(1)).as("a 2xx is a 2xx").isEqualTo(PublishResult.published());
    assertThat(results.get(2)).isEqualTo(PublishResult.published());
    assertBoundedRead("endless-503");
    assertBoundedRead("endless-200");
  }

  @Test
  void aBodyTrickledOneByteASecondTimesOutWithTheRequestTimeout() throws Exception {
    behaviours.put(
        "trickle",
        (out, count) -> {
          write(out, count, head("500 Internal Server Error", "Content-Length: 100000"));
          for (int i = 0; i < 100_000; i++) {
            write(out, count, new byte[] {'x'});
            Thread.sleep(1000); // the attack: one byte a second, far below any timeout
          }
        });
    List<PublishResult> results =
        publishWithDeadline(List.of(event("trickle"), event("sane")), TIMEOUT);

    assertThat(results.get(0))
        .isInstanceOfSatisfying(
            PublishResult.Retryable.class,
            r ->
                assertThat(r.reason())
                    .contains("timed out")
                    .contains("connection, headers and body")
                    .contains("PT1S"));
    assertThat(results.get(1)).isEqualTo(PublishResult.published());
    assertBoundedRead("trickle");
  }

  @Test
  void anEndlessHeaderBlockFailsWithoutFillingTheHeap() throws Exception {
    behaviours.put(
        "headers",
        (out, count) -> {
          write(out, count, "HTTP/1.1 200 OK\r\n".getBytes(StandardCharsets.US_ASCII));
          byte[] filler = new byte[1000];
          Arrays.fill(filler, (byte) 'h');
          for (long n = 0; count.get() < RECEIVER_CAP; n++) {
            write(out, count, ("X-Filler-" + n + ": ").getBytes(StandardCharsets.US_ASCII));
            write(out, count, filler);
            write(out, count, "\r\n".getBytes(StandardCharsets.US_ASCII));
          }
        });
    List<PublishResult> results =
        publishWithDeadline(List.of(event("headers"), event("sane")), TIMEOUT);

    assertThat(results.get(0)).isInstanceOf(PublishResult.Retryable.class);
    assertThat(((PublishResult.Retryable) results.get(0)).reason())
        .containsAnyOf("I/O error", "timed out");
    assertThat(results.get(1)).isEqualTo(PublishResult.published());
    assertBoundedRead("headers");
  }

  /**
   * Publishes {@code batch} with a {@link #TIMEOUT} request timeout and fails unless all answers
   * are in within {@code expected + MARGIN}.
   */
  private List<PublishResult> publishWithDeadline(List<OutboxMessage> batch, Duration expected)
      throws Exception {
    WebhookRouting routing =
        m ->
            URI.create(
                "http://127.0.0.1:"
                    + (m.aggregateId().equals("sane")
                        ? sane.getAddress().getPort()
                        : hostile.getLocalPort())
                    + "/events");
    WebhookPublisher publisher = WebhookPublisher.builder(routing).requestTimeout(TIMEOUT).build();
    long start = System.nanoTime();
    List<PublishResult> results;
    try {
      results =
          publisher
              .publish(batch)
              .toCompletableFuture()
              .get(expected.plus(MARGIN).toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      // Not closed: closing the client would wait for the exchange the receiver holds open.
      throw new AssertionError("no answer within " + expected.plus(MARGIN), e);
    }
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    System.out.printf(
        Locale.ROOT, "batch of %d answered in %d ms%n", batch.size(), took.toMillis());
    publisher.close(); // waits for the exchanges: none is left
    assertThat(saneRequests.get()).as("the sane receiver's requests").isEqualTo(1);
    return results;
  }

  /** The hostile connection of {@code aggregate} ended, having pushed a bounded number of bytes. */
  private void assertBoundedRead(String aggregate) throws InterruptedException {
    CountDownLatch end = ended.get(aggregate);
    assertThat(end).as("a connection for " + aggregate).isNotNull();
    assertThat(end.await(10, TimeUnit.SECONDS))
        .as("the client closed the connection of " + aggregate)
        .isTrue();
    long sent = written.get(aggregate).get();
    System.out.printf(Locale.ROOT, "%s: the receiver pushed %d bytes%n", aggregate, sent);
    assertThat(sent)
        .as("bytes " + aggregate + " pushed into the client")
        .isLessThan(MAX_BYTES_SENT);
  }

  private static OutboxMessage event(String aggregateId) {
    return TestEvents.one("order", aggregateId, 1, "{\"n\":1}");
  }

  private static Behaviour endlessBody(String status) {
    return (out, count) -> {
      write(out, count, head(status, "Content-Length: 1099511627776")); // 1 TiB announced
      byte[] chunk = new byte[64 * 1024];
      Arrays.fill(chunk, (byte) 'x');
      while (count.get() < RECEIVER_CAP) {
        write(out, count, chunk);
      }
    };
  }

  private static byte[] head(String status, String header) {
    return ("HTTP/1.1 " + status + "\r\nContent-Type: text/plain\r\n" + header + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII);
  }

  private static void write(OutputStream out, AtomicLong count, byte[] bytes) throws IOException {
    out.write(bytes);
    out.flush();
    count.addAndGet(bytes.length);
  }

  private void acceptHostile() {
    while (!hostile.isClosed()) {
      Socket socket;
      try {
        socket = hostile.accept();
      } catch (IOException e) {
        return; // closed
      }
      Thread.ofVirtual().name("hostile-connection").start(() -> serve(socket));
    }
  }

  private void serve(Socket socket) {
    AtomicLong count = new AtomicLong();
    CountDownLatch end = new CountDownLatch(1);
    String aggregate = null;
    try (socket) {
      socket.setSendBufferSize(64 * 1024);
      String request = readRequest(socket.getInputStream());
      aggregate = header(request, WebhookPublisher.AGGREGATE_ID_HEADER);
      written.put(aggregate, count);
      ended.put(aggregate, end);
      behaviours.get(aggregate).answer(socket.getOutputStream(), count);
    } catch (IOException e) {
      // The client closed the connection: what a bounded client does.
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      end.countDown();
    }
  }

  /** The request's head; its body (a small JSON) is read and dropped. */
  private static String readRequest(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int b;
    while ((b = in.read()) >= 0) {
      head.write(b);
      byte[] h = head.toByteArray();
      int n = h.length;
      if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
        break;
      }
    }
    String text = head.toString(StandardCharsets.ISO_8859_1);
    String length = header(text, "Content-Length");
    in.readNBytes(length == null ? 0 : Integer.parseInt(length.trim()));
    return text;
  }

  private static String header(String head, String name) {
    for (String line : head.split("\r\n")) {
      int colon = line.indexOf(':');
      if (colon > 0 && line.substring(0, colon).trim().equalsIgnoreCase(name)) {
        return line.substring(colon + 1).trim();
      }
    }
    return null;
  }
}
