package dev.pgoutbox.spring.boot;

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
 * A loopback TCP proxy in front of the real PostgreSQL, to cut the application off its database and
 * bring it back without touching the shared server: {@link #stop()} cuts every proxied connection
 * and makes the proxy drop new ones at once, {@link #start()} lets them through again. The proxy
 * keeps its listening port all along. (The same proxy as outbox-relay's test tree, kept here so
 * this module depends on no other module's tests.)
 */
final class TcpProxy implements AutoCloseable {

  private final int targetPort;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final ServerSocket server;
  private volatile boolean cut;

  /** A proxy to {@code 127.0.0.1:targetPort}, listening on a free port, letting clients through. */
  public TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
    Thread.ofVirtual().name("tcp-proxy-accept-" + server.getLocalPort()).start(this::accept);
  }

  /** The port clients connect to. */
  public int port() {
    return server.getLocalPort();
  }

  /** Lets clients through again. */
  public void start() {
    cut = false;
  }

  /** Cuts every proxied connection; new connections are closed as soon as they are accepted. */
  public synchronized void stop() throws IOException {
    cut = true;
    for (Socket socket : sockets) {
      socket.close();
    }
    sockets.clear();
  }

  @Override
  public void close() throws IOException {
    stop();
    server.close();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        if (cut) {
          client.close();
          continue;
        }
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        synchronized (this) {
          if (cut) {
            client.close();
            upstream.close();
            continue;
          }
          sockets.add(client);
          sockets.add(upstream);
        }
        Thread.ofVirtual().start(() -> pipe(client, upstream));
        Thread.ofVirtual().start(() -> pipe(upstream, client));
      } catch (IOException e) {
        // Closed by close(), or the target refused: the client sees a closed socket.
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
