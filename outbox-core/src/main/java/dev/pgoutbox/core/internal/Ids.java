package dev.pgoutbox.core.internal;

import com.fasterxml.uuid.Generators;
import com.fasterxml.uuid.impl.TimeBasedEpochGenerator;
import java.util.UUID;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Event ids: UUIDv7 from FasterXML's {@code java-uuid-generator}, one generator per JVM, so ids
 * made in this JVM increase strictly in the order they are made.
 *
 * <p>The generator counts up within a millisecond, but {@code generate()} reads the clock before
 * taking its lock: a thread holding an older millisecond can enter after a newer one and restart
 * the count with fresh random bits, breaking the order under contention. And it starts afresh when
 * the clock goes back (an NTP step). So the clock is read here, never going back, under the same
 * lock as {@code construct}.
 */
public final class Ids {

  private static final TimeBasedEpochGenerator GENERATOR = Generators.timeBasedEpochGenerator();
  private static final ReentrantLock LOCK = new ReentrantLock();
  private static long lastMillis;

  private Ids() {}

  /** A new UUIDv7, greater than every id this JVM made before. */
  public static UUID next() {
    LOCK.lock();
    try {
      lastMillis = Math.max(lastMillis, System.currentTimeMillis());
      return GENERATOR.construct(lastMillis);
    } finally {
      LOCK.unlock();
    }
  }

  /** The Unix time in milliseconds in the first 48 bits of a UUIDv7. */
  public static long epochMillis(UUID uuidV7) {
    return uuidV7.getMostSignificantBits() >>> 16;
  }
}
