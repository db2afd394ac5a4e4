package dev.pgoutbox.relay.wal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.pgoutbox.relay.ListenSocketFactory;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The WAL reader's replication sockets answer pgjdbc's 1 ms "has another message arrived?" probe at
 * once only inside {@link ReplicationSocketFactory#withoutWaiting}, on the thread that asked: idle,
 * the probe's wait is the reader's pause between polls; with a transaction in hand it would delay
 * every event by that millisecond. Which path answered is told apart by the exception's message,
 * not by timing.
 */
class ReplicationSocketFactoryTest {

  /** pgjdbc's probe: a 1 ms read timeout. */
  private static final int PROBE_MILLIS = 1;

  private ServerSocket server;
  private Socket serverSide;
  private Socket client;

  @BeforeEach
  void connect() throws Exception {
    server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    client =
        new ReplicationSocketFactory()
            .createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
    serverSide = server.accept();
    client.setSoTimeout(PROBE_MILLIS);
  }

  @AfterEach
  void close() throws Exception {
    client.close();
    serverSide.close();
    server.close();
  }

  @Test
  void outsideWithoutWaitingTheProbeWaitsForTheSocketsOwnTimeout() throws Exception {
    InputStream in = client.getInputStream();

    assertThatThrownBy(in::read)
        .isInstanceOf(SocketTimeoutException.class)
        .hasMessageNotContaining("no message has arrived");
  }

  @Test
  void insideWithoutWaitingTheProbeIsAnsweredAtOnceWhenNothingWasReceived() throws Exception {
    InputStream in = client.getInputStream();

    assertThatThrownBy(() -> ReplicationSocketFactory.withoutWaiting(() -> readOne(in)))
        .isInstanceOf(IllegalStateException.class)
        .cause()
        .isInstanceOf(SocketTimeoutException.class)
        .hasMessage("no message has arrived");
  }

  @Test
  void insideWithoutWaitingWhatWasReceivedIsRead() throws Exception {
    InputStream in = client.getInputStream();
    OutputStream out = serverSide.getOutputStream();
    out.write(42);
    out.flush();
    awaitReceived(in);

    assertThat(ReplicationSocketFactory.withoutWaiting(() -> readOne(in))).isEqualTo(42);
  }

  @Test
  void anotherThreadsReadsStillWaitWhileOneReadsWithoutWaiting() throws Exception {
    InputStream in = client.getInputStream();
    Throwable[] fromOtherThread = new Throwable[1];

    ReplicationSocketFactory.withoutWaiting(
        () -> {
          Thread other =
              Thread.ofPlatform()
                  .start(
                      () -> {
                        try {
                          in.read();
                        } catch (Throwable e) {
                          fromOtherThread[0] = e;
                        }
                      });
          try {
            assertThat(other.join(java.time.Duration.ofSeconds(10))).isTrue();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
          return null;
        });

    assertThat(fromOtherThread[0])
        .isInstanceOf(SocketTimeoutException.class)
        .hasMessageNotContaining("no message has arrived");
  }

  @Test
  void aReadWithoutTheProbeTimeoutIsNeverAnsweredEarly() throws Exception {
    client.setSoTimeout(50);
    InputStream in = client.getInputStream();

    assertThatThrownBy(() -> ReplicationSocketFactory.withoutWaiting(() -> readOne(in)))
        .cause()
        .isInstanceOf(SocketTimeoutException.class)
        .hasMessageNotContaining("no message has arrived");
  }

  @Test
  void listenSocketsAnswerTheProbeAtOnceOnEveryThread() throws Exception {
    try (Socket listen =
            new ListenSocketFactory()
                .createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort());
        Socket accepted = server.accept()) {
      listen.setSoTimeout(PROBE_MILLIS);
      assertThat(accepted.isConnected()).isTrue();

      assertThatThrownBy(listen.getInputStream()::read)
          .isInstanceOf(SocketTimeoutException.class)
          .hasMessage("no message has arrived");
    }
  }

  @Test
  void replicationConnectionsUseTheFactoryUnlessTheHostNamedOne() {
    assertThat(ReplicationConnections.replicationProperties(new Properties()))
        .containsEntry("socketFactory", ReplicationSocketFactory.class.getName())
        .containsEntry("replication", "database");

    Properties hosts = new Properties();
    hosts.setProperty("socketFactory", "com.example.TunnelSocketFactory");
    assertThat(ReplicationConnections.replicationProperties(hosts))
        .containsEntry("socketFactory", "com.example.TunnelSocketFactory");
  }

  private static int readOne(InputStream in) {
    try {
      return in.read();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Waits (without sleeping a fixed time) until the byte the server sent has been received. */
  private static void awaitReceived(InputStream in) throws Exception {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (in.available() == 0) {
      assertThat(System.nanoTime()).as("the byte the server sent arrives").isLessThan(deadline);
      Thread.onSpinWait();
    }
  }
}
