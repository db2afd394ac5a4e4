package dev.pgoutbox.relay.internal;

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
 * Sockets that can answer pgjdbc's "has another message arrived?" probe at once. pgjdbc asks it by
 * setting a 1 ms read timeout and reading: with nothing received, the read waits that millisecond
 * for the next message. While {@link #answerAtOnce()} says so, a socket from here reports "nothing
 * yet" at once from what the operating system has already received. The base of {@link
 * dev.pgoutbox.relay.ListenSocketFactory} (always at once) and {@link ReplicationSocketFactory}
 * (only while the WAL reader has a transaction in hand); public only because they are.
 */
public abstract class ProbeAnsweringSocketFactory extends SocketFactory {

  /** The read timeout pgjdbc sets only to ask whether another message has arrived. */
  private static final int PGJDBC_PROBE_MILLIS = 1;

  /** For the two factories above. */
  protected ProbeAnsweringSocketFactory() {}

  /** Whether a probe asked now, on the calling thread, is answered at once. */
  protected abstract boolean answerAtOnce();

  @Override
  public final Socket createSocket() {
    return new ProbeAnsweringSocket();
  }

  @Override
  public final Socket createSocket(String host, int port) throws IOException {
    return connected(new InetSocketAddress(host, port), null);
  }

  @Override
  public final Socket createSocket(String host, int port, InetAddress localHost, int localPort)
      throws IOException {
    return connected(
        new InetSocketAddress(host, port), new InetSocketAddress(localHost, localPort));
  }

  @Override
  public final Socket createSocket(InetAddress host, int port) throws IOException {
    return connected(new InetSocketAddress(host, port), null);
  }

  @Override
  public final Socket createSocket(
      InetAddress address, int port, InetAddress localAddress, int localPort) throws IOException {
    return connected(
        new InetSocketAddress(address, port), new InetSocketAddress(localAddress, localPort));
  }

  private Socket connected(InetSocketAddress remote, @Nullable InetSocketAddress local)
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

  private final class ProbeAnsweringSocket extends Socket {

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
      if (probing && received.available() == 0 && answerAtOnce()) {
        throw new SocketTimeoutException("no message has arrived");
      }
    }
  }
}
