package dev.pgoutbox.relay;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import javax.net.SocketFactory;
import org.jspecify.annotations.Nullable;

/**
 * The socket factory of the relay's {@code LISTEN} connections, named in pgjdbc's {@code
 * socketFactory} connection property: {@code socketFactory=dev.pgoutbox.relay.ListenSocketFactory}.
 *
 * <p>pgjdbc reads notifications until none is left, and to decide whether one is left it waits up
 * to 1 ms for the next one. Writers that commit 1,000 or more transactions a second send one
 * notification each, so the next one nearly always arrives within that millisecond: reading "what
 * has arrived" went on for hundreds of milliseconds at a time (measured: 113 ms at the median and 1
 * s at most at 2,000 commits a second), and a relay that read its notifications between batches
 * published a quarter of what was written. This factory's sockets answer that 1 ms probe at once
 * from what the operating system has already received, so reading notifications never waits for the
 * next one; a wait for the first one (the relay's idle wait) is unchanged.
 *
 * <p>{@link ListenConnectionFactory#of} and the factories the relay derives from its data source
 * set it unless a {@code socketFactory} is configured already. A custom {@link
 * ListenConnectionFactory} should open its connections with it too.
 */
public final class ListenSocketFactory extends SocketFactory {

  /** The read timeout pgjdbc sets only to ask whether another message has arrived. */
  private static final int PGJDBC_PROBE_MILLIS = 1;

  /** Instantiated by pgjdbc from its name. */
  public ListenSocketFactory() {}

  @Override
  public Socket createSocket() {
    return new ProbeAnsweringSocket();
  }

  @Override
  public Socket createSocket(String host, int port) throws IOException {
    return connected(new InetSocketAddress(host, port), null);
  }

  @Override
  public Socket createSocket(String host, int port, InetAddress localHost, int localPort)
      throws IOException {
    return connected(
        new InetSocketAddress(host, port), new InetSocketAddress(localHost, localPort));
  }

  @Override
  public Socket createSocket(InetAddress host, int port) throws IOException {
    return connected(new InetSocketAddress(host, port), null);
  }

  @Override
  public Socket createSocket(InetAddress address, int port, InetAddress localAddress, int localPort)
      throws IOException {
    return connected(
        new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
  }

  private static Socket connected(InetSocketAddress remote, @Nullable InetSocketAddress local)
      throws IOException {
    Socket socket = new ProbeAnsweringSocket();
    try {
      if (local != null) {
        socket.bind(local);
      }
      socket.connect(remote);
      return socket;
    } catch (IOException | RuntimeException e) {
      socket.close();
      throw e;
    }
  }

  /**
   * A socket whose reads under pgjdbc's probe timeout return "nothing yet" at once when nothing has
   * been received, instead of waiting the millisecond for the next notification.
   */
  private static final class ProbeAnsweringSocket extends Socket {

    private volatile boolean probing;
    private @Nullable InputStream input;

    @Override
    public void setSoTimeout(int timeout) throws SocketException {
      probing = timeout == PGJDBC_PROBE_MILLIS;
      super.setSoTimeout(timeout);
    }

    @Override
    public synchronized InputStream getInputStream() throws IOException {
      if (input == null) {
        InputStream received = super.getInputStream();
        input =
            new FilterInputStream(received) {
              @Override
              public int read() throws IOException {
                answerProbe(received);
                return super.read();
              }

              @Override
              public int read(byte[] buffer, int offset, int length) throws IOException {
                answerProbe(received);
                return super.read(buffer, offset, length);
              }
            };
      }
      return input;
    }

    private void answerProbe(InputStream received) throws IOException {
      if (probing && received.available() == 0) {
        throw new SocketTimeoutException("no notification has arrived");
      }
    }
  }
}
