package dev.pgoutbox.relay.brokers;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A loopback TCP proxy in front of a real broker, to cut it off and bring it back without stopping
 * a shared broker: {@link #stop()} closes the listening socket and every proxied connection
 * (clients see the broker vanish), {@link #start()} listens again on the same port.
 */
public final class TcpProxy implements AutoCloseable {

  private final int targetPort;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private volatile int port;
  private volatile ServerSocket server;

  /** A proxy to {@code 127.0.0.1:targetPort}, listening on a free port. */
  public TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    start();
  }

  /** The port clients connect to. */
  public int port() {
    return port;
  }

  /** Listens (again) on the proxy's port. */
  public synchronized void start() throws IOException {
    if (server != null) {
      return;
    }
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
    port = s.getLocalPort();
    server = s;
    Thread.ofVirtual().name("tcp-proxy-accept-" + port).start(() -> accept(s));
  }

  /** Stops listening and cuts every proxied connection. */
  public synchronized void stop() throws IOException {
    ServerSocket s = server;
    server = null;
    if (s != null) {
      s.close();
    }
    for (Socket socket : sockets) {
      socket.close();
    }
    sockets.clear();
  }

  @Override
  public void close() throws IOException {
    stop();
  }

  private void accept(ServerSocket s) {
    while (!s.isClosed()) {
      try {
        Socket client = s.accept();
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(upstream);
        Thread.ofVirtual().start(() -> pipe(client, upstream));
        Thread.ofVirtual().start(() -> pipe(upstream, client));
      } catch (IOException e) {
        // Closed by stop(), or the target refused: the client sees a closed socket.
      }
    }
  }

  private void pipe(Socket from, Socket to) {
    byte[] buffer = new byte[64 * 1024];
    try (InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream()) {
      int n;
      while ((n = in.read(buffer)) >= 0) {
        out.write(buffer, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // One side went away.
    } finally {
      try {
        from.close();
        to.close();
      } catch (IOException e) {
        // Nothing more to do.
      }
      sockets.remove(from);
      sockets.remove(to);
    }
  }
}
