package dev.pgoutbox.core.internal;

import com.fasterxml.uuid.Generators;
import com.fasterxml.uuid.UUIDClock;
import com.fasterxml.uuid.impl.TimeBasedEpochGenerator;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Event ids: UUIDv7 from FasterXML's {@code java-uuid-generator}, one generator per JVM, so ids
 * made in this JVM increase strictly in the order they are made.
 */
public final class Ids {

  /**
   * The generator counts up within a millisecond, but starts afresh when the clock goes back (an
   * NTP step): this clock never does, so the order holds across clock steps too.
   */
  private static final TimeBasedEpochGenerator GENERATOR =
      Generators.timeBasedEpochGenerator(null, new MonotonicClock());

  private Ids() {}

  /** A new UUIDv7, greater than every id this JVM made before. */
  public static UUID next() {
    return GENERATOR.generate();
  }

  /** The Unix time in milliseconds in the first 48 bits of a UUIDv7. */
  public static long epochMillis(UUID uuidV7) {
    return uuidV7.getMostSignificantBits() >>> 16;
  }

  private static final class MonotonicClock extends UUIDClock {
    private final AtomicLong last = new AtomicLong();

    @Override
    public long currentTimeMillis() {
      long now = System.currentTimeMillis();
      return last.accumulateAndGet(now, Math::max);
    }
  }
}
