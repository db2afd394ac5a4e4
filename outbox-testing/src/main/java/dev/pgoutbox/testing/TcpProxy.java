package dev.pgoutbox.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A loopback TCP proxy to break a network path and restore it, in two ways:
 *
 * <ul>
 *   <li>{@link #cut()}: every proxied connection is closed and new ones are refused, so both ends
 *       see the peer vanish at once (a stopped host, a reset);
 *   <li>{@link #blackhole()}: bytes are silently dropped, so connections stay open and hang (a
 *       partition, a dead NAT entry); those connections never recover, and only a timeout on either
 *       end ends them.
 * </ul>
 *
 * {@link #restore()} lets new connections through again. The listening port stays bound all along,
 * so nothing else can take it meanwhile. Thread-safe.
 */
public final class TcpProxy implements AutoCloseable {

  private static final Pattern HOST_PORT = Pattern.compile("//([^/:?]+):(\\d+)/");

  private volatile int targetPort;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();

  /** Sockets whose bytes are dropped, from a blackhole on; closed only by {@link #close()}. */
  private final Set<Socket> blackholed = ConcurrentHashMap.newKeySet();

  private final ServerSocket server;
  private volatile boolean cut;
  private volatile boolean dropping;

  private TcpProxy(int targetPort, ServerSocket server) {
    this.targetPort = targetPort;
    this.server = server;
  }

  /**
   * A proxy to {@code 127.0.0.1:targetPort} on a free loopback port, letting clients through.
   *
   * @throws UncheckedIOException if no port can be bound
   */
  public static TcpProxy to(int targetPort) {
    try {
      ServerSocket server = new ServerSocket();
      server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
      TcpProxy proxy = new TcpProxy(targetPort, server);
      Thread.ofVirtual().name("tcp-proxy-" + server.getLocalPort()).start(proxy::accept);
      return proxy;
    } catch (IOException e) {
      throw new UncheckedIOException("Could not bind a proxy port: " + e.getMessage(), e);
    }
  }

  /**
   * A proxy to the PostgreSQL server that {@code jdbcUrl} names, which must run on this machine;
   * {@link #route} points a URL at the proxy.
   *
   * @throws IllegalArgumentException if the URL names no host and port
   */
  public static TcpProxy toServerOf(String jdbcUrl) {
    return to(Integer.parseInt(hostAndPort(jdbcUrl).group(2)));
  }

  /** {@code jdbcUrl} with its host and port replaced by this proxy's, the rest unchanged. */
  public String route(String jdbcUrl) {
    return hostAndPort(jdbcUrl).replaceFirst("//127.0.0.1:" + port() + "/");
  }

  private static Matcher hostAndPort(String jdbcUrl) {
    Matcher matcher = HOST_PORT.matcher(jdbcUrl);
    if (!matcher.find()) {
      throw new IllegalArgumentException("no host:port in JDBC URL " + jdbcUrl);
    }
    return matcher;
  }

  /** The port clients connect to. */
  public int port() {
    return server.getLocalPort();
  }

  /**
   * Sends new connections to {@code 127.0.0.1:port} from now on (a fail-over to another server);
   * open ones stay with the old target until they end or are {@link #cut()}.
   */
  public void retarget(int port) {
    this.targetPort = port;
  }

  /** Whether the path is cut. */
  public boolean isCut() {
    return cut;
  }

  /** Closes every proxied connection; new ones are closed as soon as they are accepted. */
  public synchronized void cut() {
    cut = true;
    for (Socket socket : sockets) {
      closeQuietly(socket);
    }
    sockets.clear();
  }

  /**
   * Drops every byte from now on: open connections hang for good, new ones are accepted and hang.
   */
  public synchronized void blackhole() {
    dropping = true;
    blackholed.addAll(sockets);
    sockets.clear();
  }

  /** Lets new connections through again; blackholed ones stay dead. */
  public synchronized void restore() {
    cut = false;
    dropping = false;
  }

  @Override
  public void close() {
    cut();
    synchronized (this) {
      blackholed.forEach(TcpProxy::closeQuietly);
      blackholed.clear();
    }
    closeQuietly(server);
  }

  private void accept() {
    while (!server.isClosed()) {
      Socket client;
      try {
        client = server.accept();
      } catch (IOException e) {
        return; // closed by close()
      }
      if (cut) {
        closeQuietly(client);
        continue;
      }
      if (dropping) {
        blackholed.add(client);
        Thread.ofVirtual().start(() -> drain(client));
        continue;
      }
      Socket upstream;
      try {
        upstream = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
      } catch (IOException e) {
        closeQuietly(client); // the target is down: the client sees a closed connection
        continue;
      }
      synchronized (this) {
        if (cut) {
          closeQuietly(client);
          closeQuietly(upstream);
          continue;
        }
        sockets.add(client);
        sockets.add(upstream);
      }
      Thread.ofVirtual().start(() -> pipe(client, upstream));
      Thread.ofVirtual().start(() -> pipe(upstream, client));
    }
  }

  private void pipe(Socket from, Socket to) {
    byte[] buffer = new byte[64 * 1024];
    try {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      int n;
      while ((n = in.read(buffer)) >= 0) {
        if (blackholed.contains(from)) {
          continue; // dropped on the floor
        }
        out.write(buffer, 0, n);
        out.flush();
      }
    } catch (IOException e) {
      // One side went away: close both below.
    } finally {
      if (!blackholed.contains(from)) {
        closeQuietly(from);
        closeQuietly(to);
      }
      sockets.remove(from);
      sockets.remove(to);
    }
  }

  /** Reads and drops what a client accepted during a blackhole sends, until it gives up. */
  private static void drain(Socket client) {
    byte[] buffer = new byte[8 * 1024];
    try {
      InputStream in = client.getInputStream();
      while (in.read(buffer) >= 0) {
        // dropped
      }
    } catch (IOException e) {
      // The client gave up, or close() closed it.
    }
  }

  private static void closeQuietly(AutoCloseable closeable) {
    try {
      closeable.close();
    } catch (Exception e) {
      // Nothing more to do with a socket that will not close.
    }
  }

  @Override
  public String toString() {
    return "TcpProxy[" + port() + " -> " + targetPort + (cut ? ", cut" : "") + "]";
  }
}
